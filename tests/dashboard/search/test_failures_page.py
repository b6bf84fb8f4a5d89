"""The failures page: groups by cause from one bounded read, and acting on a group asks first with its count."""

from __future__ import annotations

import re
from typing import Any, cast

import pytest
from django.test import Client

from dashboard.actions import runner
from dashboard.actions.models import AuditEntry
from queues import EchoMQ, moves
from queues.failures import groups as groups_read
from tests.support.confirm import confirmation_token
from tests.support.inline_code import inline_code

pytestmark = pytest.mark.django_db(transaction=True)


def fail_for_good(mq: EchoMQ, job_id: str, error: str) -> None:
    mq.enqueue("mail", "{}", job_id=job_id, max_attempts=1)
    [job] = [j for j in mq.claim("mail", count=100) if j.id == job_id]
    mq.run(moves.fail("mail", job.id, job.token, error=error, backoff_ms=0))


@pytest.fixture
def failing(console_mq: EchoMQ) -> EchoMQ:
    for n in range(5):
        fail_for_good(console_mq, f"t{n}", f"timeout after {3000 + n} ms on host h{n}")
    fail_for_good(console_mq, "c1", "card <b>declined</b>")
    return console_mq


def test_the_page_lists_the_groups_largest_first_with_a_sample_and_its_error(viewer_client: Client,
                                                                             failing: EchoMQ) -> None:
    response = viewer_client.get("/failures/?q=mail")

    html = response.content.decode()
    assert response.status_code == 200 and inline_code(html) == []
    signatures = re.findall(r'<span class="mono signature">([^<]*)</span>', html)
    assert signatures == ["timeout after &lt;n&gt; ms on host &lt;id&gt;", "card &lt;b&gt;declined&lt;/b&gt;"]
    assert "timeout after 3004 ms on host h4" in html  # the latest job's full error
    assert "6 failed jobs; the 2 largest of 2 groups hold 6" in html
    assert "Retry 5</button>" not in html  # a viewer gets no buttons


def test_a_bad_queue_name_answers_400(viewer_client: Client, console_mq: EchoMQ) -> None:
    assert viewer_client.get("/failures/?q=a%20b").status_code == 400


def test_acting_on_a_group_asks_with_its_signature_and_count_then_moves_its_jobs(operator_client: Client,
                                                                                 failing: EchoMQ) -> None:
    html = operator_client.get("/failures/?q=mail").content.decode()
    group = re.search(r'name="group" value="([0-9a-f]{12})"', html).group(1)  # type: ignore[union-attr]
    data = {"q": "mail", "state": "failed", "group": group, "move": "retry"}

    asked = operator_client.post("/actions/search/", data, headers={"HX-Request": "true"})

    text = asked.content.decode()
    assert "Retry the 5 jobs in the failure group “timeout after &lt;n&gt; ms on host &lt;id&gt;”" in text
    token = confirmation_token(text)
    started = operator_client.post("/actions/search/", {**data, "at_most": "5", "confirmation": token},
                                   headers={"HX-Request": "true"})
    assert started.status_code == 200
    entry = AuditEntry.objects.get()
    assert runner.wait(entry.pk, timeout=60)
    entry.refresh_from_db()
    assert (entry.moved, entry.skipped, entry.missing, entry.parameters["query"]["group"]) == (5, 0, 0, group)
    assert failing.stats("mail").counts == {"pending": 5, "active": 0, "done": 0, "failed": 1}


def test_the_job_page_shows_why_every_attempt_failed(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "{}", job_id="j", max_attempts=3)
    for error in ("timeout after 3012 ms", "connection refused", "card declined"):
        [job] = console_mq.claim("mail")
        console_mq.run(moves.fail("mail", job.id, job.token, error=error, backoff_ms=0))

    html = viewer_client.get("/job/?q=mail&id=j").content.decode()

    history = html[html.index('id="job-history"'):]
    assert all(error in history for error in ("timeout after 3012 ms", "connection refused", "card declined"))



def two_releases(mq: EchoMQ) -> None:
    """Release 1 completes every job; release 2 fails those of tenant acme (one in five) with a new KeyError."""
    register: dict[str, Any] = dict(ttl_ms=60_000, pid=1, runtime="python 3.11 emq", concurrency=1, started_ms=1,
                                    held=[])
    for n, (worker_id, release) in enumerate((("host-1:1", "v1.0"), ("host-2:2", "v2.0"))):
        mq.run(moves.register_worker("mail", worker_id, host=worker_id.split(":")[0], release=release, **register))
        for i in range(20):
            tenant = "acme" if i % 5 == 0 else f"t{i}"
            job_id = f"r{n}-{i}"
            mq.enqueue("mail", f'{{"tenant": "{tenant}", "n": {i}}}', job_id=job_id, max_attempts=1)
            [job] = mq.run(moves.claim("mail", lease_ms=30_000, worker=worker_id, count=1))
            if n == 1 and tenant == "acme":
                mq.run(moves.fail("mail", job.id, job.token, error="KeyError: 'plan'", backoff_ms=0, actor=worker_id))
            else:
                mq.run(moves.complete("mail", job.id, job.token, actor=worker_id))


def test_a_group_says_it_is_new_since_a_release_with_its_hosts_and_the_field_value_behind_it(
        viewer_client: Client, console_mq: EchoMQ) -> None:
    two_releases(console_mq)

    html = viewer_client.get("/failures/?q=mail").content.decode()

    group = html[html.index('class="failure-group"'):]
    assert 'new since release <span class="mono">v2.0</span>' in group
    assert "100 % have tenant=&quot;acme&quot; against 20 % of all jobs" in group
    assert "last hour <b>4</b> · the hour before <b>0</b>" in group
    assert '<span class="mono">host-2</span> 4' in group


def test_the_page_filters_by_release_and_host_and_refuses_an_unknown_sort(viewer_client: Client,
                                                                          console_mq: EchoMQ) -> None:
    two_releases(console_mq)
    fail_for_good(console_mq, "other", "card declined")  # claimed by a worker that registered nothing

    by_v2 = viewer_client.get("/failures/?q=mail&release=v2.0").content.decode()
    unknown = viewer_client.get("/failures/?q=mail&release=-").content.decode()
    by_host = viewer_client.get("/failures/?q=mail&host=host-2").content.decode()

    assert re.findall(r'<span class="mono signature">([^<]*)</span>', by_v2) == ["KeyError: &#x27;?&#x27;"]
    assert re.findall(r'<span class="mono signature">([^<]*)</span>', unknown) == ["card declined"]
    assert re.findall(r'<span class="mono signature">([^<]*)</span>', by_host) == ["KeyError: &#x27;?&#x27;"]
    assert "1 groups left out by the filters" in by_v2
    assert viewer_client.get("/failures/?q=mail&sort=sideways").status_code == 400


def test_the_api_answers_the_same_explanation(viewer_client: Client, console_mq: EchoMQ) -> None:
    two_releases(console_mq)

    answer = viewer_client.get("/api/failures?q=mail&sort=new").json()

    [group] = answer["groups"]
    assert (group["new_since"], group["releases_ever"], group["sampled"]) == ("v2.0", ["v2.0"], 4)
    assert group["hosts"] == [{"host": "host-2", "jobs": 4}]
    assert group["fields"][0]["field"] == 'tenant="acme"' and group["fields"][0]["group_share"] == 1.0
    assert answer["sample_whole"] and answer["sort"] == "new"


def with_old_release_failing_too(mq: EchoMQ) -> None:
    """Two more jobs fail with the same KeyError on release 1 (host-1), after the two releases above."""
    two_releases(mq)
    for i in range(2):
        mq.enqueue("mail", '{"tenant": "acme"}', job_id=f"late-{i}", max_attempts=1)
        [job] = mq.run(moves.claim("mail", lease_ms=30_000, worker="host-1:1", count=1))
        mq.run(moves.fail("mail", job.id, job.token, error="KeyError: 'plan'", backoff_ms=0, actor="host-1:1"))


def test_acting_on_a_slice_asks_with_what_and_how_many_then_moves_no_more(operator_client: Client,
                                                                         console_mq: EchoMQ) -> None:
    with_old_release_failing_too(console_mq)
    html = operator_client.get("/failures/?q=mail").content.decode()
    group = re.search(r'name="group" value="([0-9a-f]{12})"', html).group(1)  # type: ignore[union-attr]
    assert '<option value="v2.0">v2.0</option>' in html[html.index('class="group-slice-form'):]
    data = {"q": "mail", "state": "failed", "group": group, "release": "v2.0", "move": "retry", "into": "failure-runs"}

    asked = operator_client.post("/actions/search/", data, headers={"HX-Request": "true"})

    text = asked.content.decode()
    assert (f"Retry the 4 jobs matching now: failed jobs whose failure group is {group} and newest attempt&#x27;s "
            "release is &#x27;v2.0&#x27;, in") in text
    assert console_mq.stats("mail").counts["failed"] == 6  # nothing moved before the confirmation
    token = confirmation_token(text)
    operator_client.post("/actions/search/", {**data, "at_most": "4", "confirmation": token},
                         headers={"HX-Request": "true"})
    entry = AuditEntry.objects.get()
    assert runner.wait(entry.pk, timeout=60)
    entry.refresh_from_db()
    assert (entry.moved, entry.skipped, entry.parameters["query"]["release"]) == (4, 0, "v2.0")
    pending = {m.decode() for m in cast(list[bytes], console_mq.redis.zrange("emq:{mail}:pending", 0, -1))}
    assert pending == {"r1-0", "r1-5", "r1-10", "r1-15"}


def test_the_api_acts_on_a_slice_once_confirmed_and_on_no_more_than_it_stated(operator_client: Client,
                                                                              console_mq: EchoMQ) -> None:
    with_old_release_failing_too(console_mq)
    group = console_mq.run(groups_read("mail")).groups[0].id
    body = {"queue": "mail", "move": "retry", "group": group, "host": "host-1"}

    asked = operator_client.post("/api/failures/actions", body, content_type="application/json")
    # Two more fail on host-1 between the confirmation and the run: the run still moves 2.
    for i in range(2):
        console_mq.enqueue("mail", '{"tenant": "acme"}', job_id=f"later-{i}", max_attempts=1)
        [job] = console_mq.run(moves.claim("mail", lease_ms=30_000, worker="host-1:1", count=1))
        console_mq.run(moves.fail("mail", job.id, job.token, error="KeyError: 'x'", backoff_ms=0, actor="host-1:1"))
    started = operator_client.post("/api/failures/actions", {**body, "confirmation": asked.json()["confirmation"]},
                                   content_type="application/json")
    wrong_move = operator_client.post("/api/failures/actions", {**body, "move": "promote"},
                                      content_type="application/json")

    assert asked.status_code == 428 and asked.json()["count"] == 2
    assert "newest attempt's host is 'host-1'" in asked.json()["text"]
    assert started.status_code == 202
    assert runner.wait(started.json()["id"], timeout=60)
    entry = AuditEntry.objects.get(pk=started.json()["id"])
    assert (entry.moved, entry.skipped) == (2, 0)
    assert console_mq.stats("mail").counts["pending"] == 2
    assert wrong_move.status_code == 400 and "promote applies to pending jobs" in wrong_move.json()["error"]
