"""A job search over every deployment (staging, a redis-server, and production, the 3-master cluster), at once:
each one's count, complete or a floor that says how far it got, its first matches linking to the job on that
deployment, the deployments that did not answer named; masks read from each deployment; bad input runs nothing."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.api.schemas import DeploymentSearchIn
from dashboard.roles import OPERATORS, VIEWERS
from dashboard.search.budget import SLOTS
from dashboard.search.requests import FORM_FIELDS
from queues import QueueKeys
from queues.keys import QUEUE_REGISTRY
from queues.redaction import config_set
from queues.scripts import script
from tests.support.deployments import Deployments, person, staging_and_production
from tests.support.jobs import failed_job
from tests.support.redis_servers import RedisClusterNodes

if TYPE_CHECKING:
    from django.test.client import _MonkeyPatchedWSGIResponse as TestResponse

pytestmark = pytest.mark.django_db(transaction=True)

SEARCH = "/deployments/?state=failed&error=boom"


@pytest.fixture
def deployments(redis_cluster: RedisClusterNodes, settings: SettingsWrapper) -> Iterator[Deployments]:
    settings.EMQ_DEPLOYMENT_SEARCH_BUDGET_S = 3.0
    with staging_and_production(redis_cluster, settings) as found:
        # No test here is about a deployment that stalls (a stopped one refuses at once): the wait past the
        # search's budget is long, so that at load 10 a deployment's first search (its connection, the script's
        # load, one step) is not taken for a stall.
        settings.EMQ_DEPLOYMENT_BUDGET_S = 30.0
        yield found


@pytest.fixture
def sara() -> Client:
    """An operator who may act on both."""
    return person("sara", OPERATORS, "staging-ops", "oncall", "sre")


@pytest.fixture
def otto() -> Client:
    """An operator who may act on staging and only look at production."""
    return person("otto", OPERATORS, "staging-ops", "oncall")


@pytest.fixture
def failed_in_both(deployments: Deployments) -> Deployments:
    """boom failures: two in staging's mail, three in production's mail and thumbs (on two of its masters)."""
    failed_job(deployments.staging, "mail", "s1")
    failed_job(deployments.staging, "mail", "s2")
    failed_job(deployments.staging, "mail", "quiet", error="other")
    failed_job(deployments.production, "mail", "p1")
    failed_job(deployments.production, "mail", "p2")
    failed_job(deployments.production, "thumbs", "p3")
    return deployments


def _section(answer: TestResponse) -> str:
    """The page's search section (the switcher above links to the same page on each deployment)."""
    return answer.content.decode().split('id="deployment-search"')[1]


def _by_name(answer: TestResponse) -> dict[str, Any]:
    searched = answer.context["searched"]
    assert searched is not None
    return {a.deployment.name: a for a in searched.answers}


def _value(found: dict[str, Any], name: str) -> Any:
    """What the search found on deployment ``name``; a failure says why it did not answer."""
    assert found[name].value is not None, found[name].error
    return found[name].value


def test_a_search_that_matches_in_both_shows_each_count_and_links_to_the_job_there(failed_in_both: Deployments,
                                                                                     sara: Client) -> None:
    answer = sara.get(SEARCH)

    page = answer.content.decode()
    assert answer.status_code == 200
    found = _by_name(answer)
    assert _value(found, "staging").matched == 2 and _value(found, "staging").complete
    assert _value(found, "production").matched == 3 and _value(found, "production").complete
    assert "2 matches in 1 queue" in page and "3 matches in 2 queues" in page
    for queue, job_id, deployment in (("mail", "s1", "staging"), ("mail", "s2", "staging"),
                                      ("mail", "p1", "production"), ("thumbs", "p3", "production")):
        assert f'href="/job/?q={queue}&amp;id={job_id}&amp;d={deployment}"' in page
    assert "id=quiet" not in page
    assert answer.context["searched"].missing == [] and answer.context["searched"].partial == []


def test_with_staging_down_the_search_shows_production_and_names_staging(failed_in_both: Deployments,
                                                                         sara: Client) -> None:
    failed_in_both.staging_server.stop()

    answer = sara.get(SEARCH)

    page = _section(answer)
    assert answer.status_code == 200
    found = _by_name(answer)
    assert _value(found, "production").matched == 3 and "&amp;d=production" in page
    assert not found["staging"].answered
    [missing] = answer.context["searched"].missing
    assert missing.startswith("staging did not answer") and "its matches are not in this search" in page
    assert "&amp;d=staging" not in page


def test_a_search_that_cannot_finish_within_its_budget_says_at_least_and_how_far_it_got(
        deployments: Deployments, sara: Client, settings: SettingsWrapper) -> None:
    for queue in ("a-mail", "b-mail", "c-mail"):
        failed_job(deployments.staging, queue, f"{queue}-1")
    failed_job(deployments.production, "mail", "p1")
    # Spent before the first step: each deployment runs one step (one queue at most) and stops. The wait for a
    # deployment's answer is the search budget plus this one: long, so that at load 10 a deployment whose one
    # step takes over a second still answers (it is then "at least", not missing).
    settings.EMQ_DEPLOYMENT_SEARCH_BUDGET_S = 0.001
    settings.EMQ_DEPLOYMENT_BUDGET_S = 60

    answer = sara.get(SEARCH)

    assert answer.status_code == 200
    staging = _value(_by_name(answer), "staging")
    assert not staging.complete and staging.queues_total == 3 and staging.queues_searched < 3
    said = staging.describe()
    assert re.fullmatch(r"at least \d+ match(es)?: the search did not finish within 0\.001 s "
                        r"\(searched [012] of 3 queues\)", said), said
    partial = answer.context["searched"].partial
    assert f"staging: {said}" in partial
    assert said in answer.content.decode()


def test_a_viewer_who_may_see_only_staging_gets_only_staging_s_matches(failed_in_both: Deployments) -> None:
    vera = person("vera", VIEWERS)

    answer = vera.get(SEARCH)

    assert list(_by_name(answer)) == ["staging"]
    page = _section(answer)
    assert "&amp;d=staging" in page and "production" not in page
    api = vera.get("/api/deployments/search?state=failed&error=boom").json()
    assert [d["name"] for d in api["deployments"]] == ["staging"]


@pytest.mark.parametrize(("query", "says"), [
    ("state=lost&error=boom", "lost"),
    ("state=failed", "give at least one filter"),
    ("state=failed&field=user.id", "PATH=VALUE"),
    ("state=failed&error=boom&enqueued_after=yesterday", "cannot read the time"),
    ("state=pending&group=abc", "failure group"),
    ("state=failed&error=boom&q=bad%20queue", "queue"),
])
def test_bad_input_answers_400_with_the_reason_and_searches_nothing(deployments: Deployments, sara: Client,
                                                                    query: str, says: str) -> None:
    deployments.staging.enqueue("mail", "x")
    searched_before = deployments.staging.redis.script_exists(script("search").sha)

    page = sara.get(f"/deployments/?{query}")
    api = sara.get(f"/api/deployments/search?{query}")

    assert page.status_code == 400 and page.context["searched"] is None
    assert says in page.context["search_message"] and page.context["search_message"].startswith("not searched: ")
    assert api.status_code == 400 and says in api.json()["error"]
    assert deployments.staging.redis.script_exists(script("search").sha) == searched_before == [False]


def test_the_search_script_is_loaded_by_a_search_that_runs(deployments: Deployments, sara: Client) -> None:
    """What the test above holds to be absent after bad input is there after a good one."""
    deployments.staging.enqueue("mail", "x")

    assert sara.get("/deployments/?state=pending&payload=x").status_code == 200

    assert deployments.staging.redis.script_exists(script("search").sha) == [True]


def test_a_person_running_as_many_searches_as_they_may_is_refused_in_words(failed_in_both: Deployments,
                                                                           sara: Client, settings: SettingsWrapper) -> None:
    user = User.objects.get(username="sara")
    for _ in range(settings.EMQ_SEARCH_PER_USER):
        SLOTS.take(user.pk)
    try:
        page = sara.get(SEARCH)
        api = sara.get("/api/deployments/search?state=failed&error=boom")
    finally:
        for _ in range(settings.EMQ_SEARCH_PER_USER):
            SLOTS.give(user.pk)

    assert page.status_code == 429 and page.context["searched"] is None
    assert "not searched now" in page.context["search_message"] and "searches of yours are running" in \
        page.context["search_message"]
    assert api.status_code == 429 and "searches of yours are running" in api.json()["error"]
    assert sara.get(SEARCH).status_code == 200  # the slots taken by the refused ones were given back


def test_the_api_answers_each_deployment_s_count_matches_and_the_one_that_did_not_answer(
        failed_in_both: Deployments, sara: Client) -> None:
    failed_in_both.staging_server.stop()

    answer = sara.get("/api/deployments/search?state=failed&error=boom&in=mail")

    assert answer.status_code == 200
    data = answer.json()
    by_name = {d["name"]: d for d in data["deployments"]}
    production = by_name["production"]
    assert production["answered"] and production["matched"] == 2 and production["complete"]
    assert production["summary"] == "2 matches in 1 queue" and production["queues_total"] == 1
    assert {m["id"] for m in production["matches"]} == {"p1", "p2"}
    assert {m["url"] for m in production["matches"]} == {"/job/?q=mail&id=p1&d=production",
                                                         "/job/?q=mail&id=p2&d=production"}
    staging = by_name["staging"]
    assert not staging["answered"] and staging["matched"] is None and staging["matches"] is None
    assert [reason.split(":")[0] for reason in data["missing"]] == ["staging did not answer"]
    assert data["query"] == "failed jobs whose error contains 'boom' in every queue whose name holds 'mail'"


def test_masks_are_read_from_each_deployment_for_the_reader_the_person_is_there(deployments: Deployments,
                                                                                 otto: Client) -> None:
    """otto acts on staging (sees its values) and only looks at production (sees its masked values masked)."""
    card = "4111-PLANTED"
    for mq, job_id in ((deployments.staging, "s1"), (deployments.production, "p1")):
        mq.run(config_set("mail", "card", mask_all=False, actor="op"))
        mq.enqueue("mail", json.dumps({"card": card, "to": "ann"}), job_id=job_id)

    by_text = otto.get(f"/deployments/?state=pending&payload={card}")
    by_field = otto.get(f"/deployments/?state=pending&field=card={card}")

    found = _by_name(by_text)
    assert _value(found, "staging").matched == 1
    assert _value(found, "production").matched == 0 and _value(found, "production").complete
    refused = _by_name(by_field)
    assert _value(refused, "staging").matched == 1
    assert _value(refused, "production").refused and _value(refused, "production").matched == 0
    assert "not searched: " in _value(refused, "production").describe()
    assert any(reason.startswith("production: not searched") for reason in by_field.context["searched"].partial)
    shown = otto.get("/deployments/?state=pending&payload=ann").content.decode()
    assert shown.count(card) == 1  # staging's; production's is masked


def test_odd_keys_on_a_deployment_are_said_and_break_nothing(failed_in_both: Deployments, sara: Client) -> None:
    failed_in_both.staging.enqueue("odd", "x")
    failed_in_both.staging.redis.set(QueueKeys("odd").failed, "not a sorted set")
    failed_in_both.staging.redis.sadd(QUEUE_REGISTRY, "not{a}queue", b"\xff\xfe", "a b")

    every = sara.get(SEARCH)
    one = sara.get("/deployments/?state=failed&error=boom&q=odd")
    api = sara.get("/api/deployments/search?state=failed&error=boom&q=odd")

    assert every.status_code == one.status_code == api.status_code == 200
    staging = _value(_by_name(every), "staging")
    assert staging.matched == 2 and not staging.complete and "1 queues could not be read (odd:" in staging.describe()
    assert _value(_by_name(every), "production").complete
    odd = _value(_by_name(one), "staging")
    assert not odd.complete and "odd could not be searched" in odd.describe()
    assert not {d["name"]: d for d in api.json()["deployments"]}["staging"]["complete"]


def test_the_api_takes_every_field_the_search_form_sends() -> None:
    """The API's parameters are written out (for their docs); they must stay the form's fields, no more, no less."""
    taken = {field.alias or name for name, field in DeploymentSearchIn.model_fields.items()}

    assert taken == {*FORM_FIELDS, "q", "in"}
