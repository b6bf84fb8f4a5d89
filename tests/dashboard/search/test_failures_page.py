"""The failures page: groups by cause from one bounded read, and acting on a group asks first with its count."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from dashboard.actions import runner
from dashboard.actions.models import AuditEntry
from queues import EchoMQ, moves
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
