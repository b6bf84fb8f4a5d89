"""Many deployments (EMQ_DEPLOYMENTS): staging, a standalone redis-server, and production, a 3-master cluster.

Each role gets what its grants say on each deployment, on pages, the API and sockets; the page over every
deployment shows the ones that answer and names the ones that do not; a production deployment's confirmation
runs only with the queue's name typed.
"""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.utils.html import escape
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.actions.models import AuditEntry
from dashboard.census import census_pass
from dashboard.deployments import deployment_named, forget, parse_deployments, use
from dashboard.roles import OPERATORS, VIEWERS, user_create
from queues import EchoMQ
from queues.connection import connect
from tests.support.confirm import confirmation_token
from tests.support.deployments import Deployments, person, staging_and_production
from tests.support.htmx import htmx_post
from tests.support.jobs import failed_job
from tests.support.redis_servers import RedisClusterNodes
from tests.support.sessions import session_cookie
from tests.support.sockets import connect as socket_connect

if TYPE_CHECKING:
    from django.test.client import _MonkeyPatchedWSGIResponse as TestResponse

pytestmark = pytest.mark.django_db(transaction=True)

JOB_ACTION = "/actions/job/"


@pytest.fixture
def deployments(redis_cluster: RedisClusterNodes, settings: SettingsWrapper) -> Iterator[Deployments]:
    with staging_and_production(redis_cluster, settings) as found:
        yield found


@pytest.fixture
def vera() -> Client:
    """A viewer outside every group: sees staging, not production (whose grant names oncall)."""
    return person("vera", VIEWERS)


@pytest.fixture
def otto() -> Client:
    """An operator who may act on staging and look at production."""
    return person("otto", OPERATORS, "staging-ops", "oncall")


@pytest.fixture
def sara() -> Client:
    """An operator who may act on both."""
    return person("sara", OPERATORS, "staging-ops", "oncall", "sre")


def _retry(client: Client, mq: EchoMQ, deployment: str, job_id: str) -> TestResponse:
    return client.post(JOB_ACTION, {"q": "mail", "id": job_id, "move": "retry", "state": "failed", "attempts": "1"},
                       headers={"HX-Request": "true", "X-EMQ-Deployment": deployment})


# Grants, one role at a time -------------------------------------------------------------------------------

def test_a_viewer_sees_staging_and_gets_403_for_production_on_pages_and_the_api(
        deployments: Deployments, vera: Client) -> None:
    failed_job(deployments.staging, "mail", "s1")
    failed_job(deployments.production, "mail", "p1")

    assert vera.get("/queue/?q=mail&d=staging").status_code == 200
    refused = vera.get("/queue/?q=mail&d=production")
    api = vera.get("/api/queues?d=production")
    overview = vera.get("/deployments/")

    assert refused.status_code == 403
    assert "may not see the deployment production" in refused.content.decode()
    assert api.status_code == 403 and "production" in api.json()["error"]
    assert 'id="deployment-staging"' in overview.content.decode()
    assert 'id="deployment-production"' not in overview.content.decode()


async def test_a_viewer_s_socket_on_production_is_closed_with_4403(deployments: Deployments, stop_followers: None,
                                                                  db: None) -> None:
    from asgiref.sync import sync_to_async

    vera = await sync_to_async(user_create)(username="vera", password="vera-password", role=VIEWERS)
    cookie = await sync_to_async(session_cookie)(vera)

    communicator = await socket_connect("/ws/overview/?d=production", cookie)

    assert await communicator.receive_output(timeout=30) == {"type": "websocket.close", "code": 4403}


def test_a_viewer_acts_on_no_deployment(deployments: Deployments, vera: Client) -> None:
    failed_job(deployments.staging, "mail", "s1")

    answer = _retry(vera, deployments.staging, "staging", "s1")

    assert answer.status_code == 403
    assert deployments.staging.job("mail", "s1").state == "failed"


def test_an_operator_acts_on_staging_and_only_looks_at_production(deployments: Deployments, otto: Client) -> None:
    failed_job(deployments.staging, "mail", "s1")
    failed_job(deployments.production, "mail", "p1")

    on_staging = _retry(otto, deployments.staging, "staging", "s1")
    on_production = _retry(otto, deployments.production, "production", "p1")

    assert on_staging.status_code == 200
    assert deployments.staging.job("mail", "s1").state == "pending"
    assert otto.get("/queue/?q=mail&d=production").status_code == 200
    assert on_production.status_code == 403
    assert "may look at the deployment production but not act on it" in on_production.content.decode()
    assert deployments.production.job("mail", "p1").state == "failed"


def test_an_operator_sees_no_action_buttons_where_they_may_only_look(deployments: Deployments, otto: Client) -> None:
    on_staging = otto.get("/?d=staging").content.decode()
    on_production = otto.get("/?d=production").content.decode()

    assert '<body class="can-act ' in on_staging and "(looks only here)" not in on_staging
    assert '<body class="view-only"' in on_production and "otto · operator (looks only here)" in on_production


def test_an_operator_granted_production_acts_on_it(deployments: Deployments, sara: Client) -> None:
    failed_job(deployments.production, "mail", "p1")

    answer = _retry(sara, deployments.production, "production", "p1")

    assert answer.status_code == 200
    assert deployments.production.job("mail", "p1").state == "pending"


def test_an_account_without_a_console_role_sees_no_deployment(deployments: Deployments) -> None:
    user = User.objects.create_user("nobody", password="nobody-password")
    client = Client()
    client.force_login(user)

    assert client.get("/deployments/").status_code == 403
    assert client.get("/?d=staging").status_code == 403


# Which deployment a request reads ------------------------------------------------------------------------

def test_each_request_reads_the_deployment_it_names_and_the_session_keeps_the_choice(
        deployments: Deployments, otto: Client) -> None:
    deployments.staging.enqueue("mail", "x", job_id="only-on-staging")

    assert otto.get("/find/?id=only-on-staging&d=staging").status_code == 302
    assert otto.get("/find/?id=only-on-staging").status_code == 302  # the session kept staging
    assert otto.get("/find/?id=only-on-staging&d=production").status_code == 404
    assert otto.get("/find/?id=only-on-staging").status_code == 404  # and now production
    # A tab still showing staging sends its own deployment with each htmx request.
    assert otto.get("/find/?id=only-on-staging", headers={"X-EMQ-Deployment": "staging"}).status_code == 302


def test_each_deployments_overview_and_its_census_hold_its_own_queues_only(
        deployments: Deployments, otto: Client) -> None:
    deployments.staging.enqueue("only-staging", "x")
    deployments.production.enqueue("only-production", "x")

    staging_page = otto.get("/?d=staging")
    production_page = otto.get("/?d=production")

    assert [row.name for row in staging_page.context["rows"]] == ["only-staging"]
    assert [row.name for row in production_page.context["rows"]] == ["only-production"]
    token = use(deployment_named("production"))
    census = census_pass().census
    forget(token)
    deadline = time.monotonic() + 30  # a bound for the background pass, not a speed
    while not (census.pass_done and census.names) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert census.names == ["only-production"]  # its thread read production, not the first deployment


def test_an_id_not_found_on_one_deployment_offers_to_look_in_every_one(deployments: Deployments,
                                                                      otto: Client) -> None:
    answer = otto.get("/find/?id=nowhere&d=staging")

    assert answer.status_code == 404
    assert '<a href="/deployments/?id=nowhere">Look in every deployment</a>' in answer.content.decode()


def test_an_unknown_deployment_is_a_400_that_names_the_known_ones(deployments: Deployments, otto: Client) -> None:
    answer = otto.get("/?d=qa")

    assert answer.status_code == 400
    assert "there is no deployment named &#x27;qa&#x27; (the console has staging, production)" in answer.content.decode()


def test_every_page_shows_the_badge_and_links_to_the_same_page_on_each_deployment(
        deployments: Deployments, otto: Client, vera: Client) -> None:
    failed_job(deployments.production, "mail", "p1")

    page = otto.get("/queue/?q=mail&d=production").content.decode()

    assert 'class="deployment-badge deployment-colour-1 deployment-production"' in page
    assert 'href="/queue/?q=mail&amp;d=staging"' in page
    assert '"X-EMQ-Deployment": "production"' in page
    assert re.search(r'ws-connect="/ws/queue/\?[^"]*&amp;d=production"', page)
    assert re.search(r'ws-connect="/ws/job/\?q=mail&amp;id=p1&amp;d=production"',
                     otto.get("/job/?q=mail&id=p1&d=production").content.decode())
    assert "/queue/?q=mail&amp;d=production" not in vera.get("/queue/?q=mail&d=staging").content.decode()


# The page over every deployment --------------------------------------------------------------------------

def test_the_deployments_page_adds_up_each_deployments_jobs(deployments: Deployments, sara: Client) -> None:
    deployments.staging.enqueue("mail", "x")
    deployments.staging.enqueue("thumbs", "x")
    failed_job(deployments.production, "mail", "p1")
    for queue in ("a", "b", "c", "d"):  # on the cluster's three masters
        deployments.production.enqueue(queue, "x")

    answer = sara.get("/deployments/")

    totals = {a.deployment.name: a.value for a in answer.context["totals"]}
    assert totals["staging"] is not None and totals["staging"].counts["pending"] == 2
    assert totals["production"] is not None and totals["production"].counts == {"pending": 4, "active": 0,
                                                                                "done": 0, "failed": 1}
    assert answer.context["missing"] == []


def test_with_staging_down_the_page_shows_production_and_names_staging(deployments: Deployments, sara: Client) -> None:
    deployments.staging.enqueue("mail", "x", job_id="same")
    deployments.production.enqueue("mail", "x", job_id="same")
    deployments.staging_server.stop()

    answer = sara.get("/deployments/?id=same")

    page = answer.content.decode()
    assert answer.status_code == 200
    totals = {a.deployment.name: a for a in answer.context["totals"]}
    production = totals["production"].value
    assert production is not None and production.counts["pending"] == 1
    assert not totals["staging"].answered
    assert "staging did not answer" in page
    found = {a.deployment.name: a for a in answer.context["found"]}
    assert found["production"].value == ["mail"]
    assert 'href="/job/?q=mail&amp;id=same&amp;d=production"' in page
    assert not found["staging"].answered and "not looked through" in page


def test_with_the_production_cluster_down_the_page_shows_staging_and_names_production(
        deployments: Deployments, sara: Client, settings: SettingsWrapper) -> None:
    # Budget enough for staging's answer at any load: the test is about which one is named, not how fast.
    settings.EMQ_DEPLOYMENT_BUDGET_S = 10.0
    cluster = RedisClusterNodes(masters=3).start()
    try:
        settings.EMQ_DEPLOYMENTS = json.dumps({"staging": {"url": deployments.staging_server.url},
                                               "production": {"url": cluster.url, "production": True}})
        EchoMQ(connect(cluster.url), actor="test").enqueue("mail", "x", job_id="same")
        deployments.staging.enqueue("mail", "x", job_id="same")
        assert sara.get("/deployments/?id=same").context["missing"] == []  # production's client is connected
        for node in cluster.servers:
            node.stop()

        answer = sara.get("/deployments/?id=same")
    finally:
        cluster.cleanup()

    totals = {a.deployment.name: a for a in answer.context["totals"]}
    staging = totals["staging"].value
    assert staging is not None and staging.counts["pending"] == 1
    assert {a.deployment.name: a.value for a in answer.context["found"]}["staging"] == ["mail"]
    # Its client may still list the queues it read last: then it answers in part, and says so as loudly.
    named = answer.context["missing"] + answer.context["partial"]
    assert named and all(reason.startswith("production ") for reason in named)
    assert all(str(escape(reason)) in answer.content.decode() for reason in named)


def test_the_api_over_every_deployment_names_the_one_that_did_not_answer(deployments: Deployments,
                                                                         sara: Client) -> None:
    deployments.production.enqueue("mail", "x", job_id="same")
    deployments.staging_server.stop()

    answer = sara.get("/api/deployments?id=same").json()

    by_name = {d["name"]: d for d in answer["deployments"]}
    assert by_name["production"]["answered"] and by_name["production"]["found"] == ["mail"]
    assert by_name["production"]["counts"]["pending"] == 1
    assert not by_name["staging"]["answered"] and by_name["staging"]["counts"] is None
    assert [reason.split(":")[0] for reason in answer["missing"]] == ["staging did not answer"]


def test_a_viewer_s_api_over_every_deployment_leaves_out_the_one_it_may_not_see(deployments: Deployments,
                                                                                vera: Client) -> None:
    answer = vera.get("/api/deployments").json()

    assert [d["name"] for d in answer["deployments"]] == ["staging"]


def test_a_stalled_deployment_is_named_once_its_budget_is_spent(deployments: Deployments, sara: Client,
                                                               settings: SettingsWrapper) -> None:
    settings.EMQ_DEPLOYMENT_BUDGET_S = 0.5
    deployments.production.enqueue("mail", "x")
    deployments.staging.enqueue("mail", "x")
    process = deployments.staging_server.process
    assert process is not None
    sara.get("/deployments/")  # connected before it stalls: the budget bounds a read, not a connect
    process.send_signal(signal.SIGSTOP)
    try:
        answer = sara.get("/deployments/")
    finally:
        process.send_signal(signal.SIGCONT)

    assert "staging did not answer" in answer.content.decode()
    [production] = [a for a in answer.context["totals"] if a.deployment.name == "production"]
    assert production.answered


# Production's confirmations ------------------------------------------------------------------------------

def _delete(client: Client, deployment: str, **extra: str) -> tuple[str, TestResponse]:
    data = {"q": "mail", "id": "p1", "move": "delete", "state": "failed", "attempts": "1"}
    headers = {"X-EMQ-Deployment": deployment}
    asked = client.post(JOB_ACTION, data, headers={"HX-Request": "true", **headers})
    token = confirmation_token(asked.content.decode())
    return asked.content.decode(), client.post(JOB_ACTION, {**data, "confirmation": token, **extra},
                                               headers={"HX-Request": "true", **headers})


def test_on_production_a_delete_asks_for_the_queue_name_and_refuses_without_it(
        deployments: Deployments, sara: Client) -> None:
    failed_job(deployments.production, "mail", "p1")

    asked, without = _delete(sara, "production")
    _, mistyped = _delete(sara, "production", typed_name="mall")

    assert 'name="typed_name"' in asked and "type <strong class=\"mono\">mail</strong> to confirm" in asked
    assert without.status_code == 409
    assert "production is a production deployment: type mail to confirm" in without.content.decode()
    assert mistyped.status_code == 409
    assert deployments.production.job("mail", "p1").exists


def test_on_production_a_delete_with_the_queue_name_typed_runs(deployments: Deployments, sara: Client) -> None:
    failed_job(deployments.production, "mail", "p1")

    _, typed = _delete(sara, "production", typed_name="mail")

    assert typed.status_code == 200
    assert not deployments.production.job("mail", "p1").exists


def test_on_staging_a_delete_asks_for_no_typed_name(deployments: Deployments, sara: Client) -> None:
    failed_job(deployments.staging, "mail", "p1")

    asked, done = _delete(sara, "staging")

    assert 'name="typed_name"' not in asked
    assert done.status_code == 200
    assert not deployments.staging.job("mail", "p1").exists


def test_a_confirmation_shown_for_staging_does_not_run_on_production(deployments: Deployments, sara: Client) -> None:
    failed_job(deployments.staging, "mail", "p1")
    failed_job(deployments.production, "mail", "p1")
    data = {"q": "mail", "id": "p1", "move": "delete", "state": "failed", "attempts": "1"}
    asked = sara.post(JOB_ACTION, data, headers={"HX-Request": "true", "X-EMQ-Deployment": "staging"})

    answer = htmx_post(sara, JOB_ACTION + "?d=production",
                       {**data, "confirmation": confirmation_token(asked.content.decode()), "typed_name": "mail"})

    assert answer.status_code == 409
    assert "shown for the deployment staging, not production" in answer.content.decode()
    assert deployments.production.job("mail", "p1").exists and deployments.staging.job("mail", "p1").exists


# The setting ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, says", [
    ("{staging: 1}", "EMQ_DEPLOYMENTS is not JSON"),
    ('["redis://a"]', "must be a JSON object of deployments"),
    ('{"staging": {"url": "http://a"}}', "staging.url must be a redis://, rediss:// or unix:// URL"),
    ('{"Staging!": {"url": "redis://a"}}', "the name 'Staging!' must be"),
    ('{"prod": {"url": "redis://a", "production": "yes"}}', "prod.production must be true or false"),
    ('{"prod": {"url": "redis://a", "act": "sre"}}', "prod.act must be a list of group names"),
    ('{"prod": {"url": "redis://a", "colour": "red"}}', "prod has unknown fields colour"),
])
def test_a_bad_setting_is_refused_saying_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ImproperlyConfigured) as refused:
        parse_deployments(text, "redis://127.0.0.1:6379/0")

    assert says in str(refused.value)


def test_without_the_setting_the_one_deployment_is_emq_redis_url() -> None:
    [only] = parse_deployments("", "redis://h:1/0")

    assert (only.name, only.url, only.production) == ("default", "redis://h:1/0", False)


def test_through_the_api_production_wants_the_queue_name_in_a_header(deployments: Deployments, sara: Client) -> None:
    failed_job(deployments.production, "mail", "p1")
    body = {"queue": "mail", "id": "p1", "move": "delete", "expect_state": "failed", "expect_attempts": 1}
    headers = {"X-EMQ-Deployment": "production"}
    asked = sara.post("/api/job/actions", body, content_type="application/json", headers=headers)
    confirmed = {**body, "confirmation": asked.json()["confirmation"]}

    without = sara.post("/api/job/actions", confirmed, content_type="application/json", headers=headers)
    typed = sara.post("/api/job/actions", confirmed, content_type="application/json",
                      headers={**headers, "X-EMQ-Typed-Name": "mail"})

    assert asked.status_code == 428 and asked.json()["type_to_confirm"] == "mail"
    assert without.status_code == 409 and "type mail to confirm" in without.json()["error"]
    assert typed.status_code == 200
    assert not deployments.production.job("mail", "p1").exists


def test_the_audit_log_says_which_deployment_each_action_was_on(deployments: Deployments, sara: Client) -> None:
    failed_job(deployments.staging, "mail", "s1")
    failed_job(deployments.production, "mail", "p1")

    _retry(sara, deployments.staging, "staging", "s1")
    _retry(sara, deployments.production, "production", "p1")

    assert list(AuditEntry.objects.order_by("id").values_list("deployment", "jobs__0__id")) == [
        ("staging", "s1"), ("production", "p1")]
    page = sara.get("/audit/").content.decode()
    assert '<span class="audit-deployment">production</span> mail' in page
