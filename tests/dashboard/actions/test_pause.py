"""Pausing a queue from the console: confirmed by the server, audited, shown on the queue page and the overview."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.actions.models import AuditEntry
from queues import EchoMQ, Paused
from tests.support.confirm import confirmed_post
from tests.support.keyspace import keyspace_dump

pytestmark = pytest.mark.django_db


def test_pause_asks_first_saying_what_it_stops_and_changes_nothing(operator_client: Client,
                                                                   console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")
    console_mq.enqueue("mail", "y")
    before = keyspace_dump(console_mq.redis)

    asked = operator_client.post("/actions/pause/", {"q": "mail", "action": "pause", "reason": "rollback"},
                                 headers={"HX-Request": "true"})

    text = asked.content.decode()
    assert asked.status_code == 200 and 'name="confirmation"' in text
    assert "Workers claim none of its 2 jobs due now" in text
    assert keyspace_dump(console_mq.redis) == before


def test_a_confirmed_pause_stops_claims_is_audited_and_shows_everywhere(operator_client: Client,
                                                                        console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")

    done = confirmed_post(operator_client, "/actions/pause/", {"q": "mail", "action": "pause",
                                                               "reason": "bad deploy <b>"})

    assert done.status_code == 200 and "paused: queue mail claims nothing" in done.content.decode()
    with pytest.raises(Paused) as paused:
        console_mq.claim("mail")
    assert (paused.value.actor, paused.value.reason) == ("console:otto", "bad deploy <b>")
    entry = AuditEntry.objects.get(action="pause")
    assert (entry.username, entry.queue, entry.outcome, entry.parameters) == ("otto", "mail", "moved",
                                                                              {"reason": "bad deploy <b>"})
    for url in ("/queue/?q=mail", "/queue/?q=mail&state=done"):
        page = operator_client.get(url).content.decode()
        assert 'id="paused-note"' in page and "bad deploy &lt;b&gt;" in page, url
    overview = operator_client.get("/").content.decode()
    assert 'class="badge paused" title="paused by console:otto: bad deploy &lt;b&gt;"' in overview


def test_resume_is_confirmed_too_and_claims_take_the_jobs_again(operator_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")
    console_mq.pause("mail", reason="maintenance")

    done = confirmed_post(operator_client, "/actions/pause/", {"q": "mail", "action": "resume"})

    assert "resumed: queue mail" in done.content.decode()
    assert console_mq.claim("mail")[0].id == "a"
    assert AuditEntry.objects.get(action="resume").outcome == "moved"
    assert 'id="paused-note"' not in operator_client.get("/queue/?q=mail").content.decode()


def test_a_viewer_may_not_pause_and_the_refusal_is_audited(viewer_client: Client, console_mq: EchoMQ) -> None:
    response = viewer_client.post("/actions/pause/", {"q": "mail", "action": "pause", "reason": "x"})

    assert response.status_code == 403
    assert not console_mq.stats("mail").paused
    assert AuditEntry.objects.get().outcome == "refused"


def test_pause_needs_post(operator_client: Client, console_mq: EchoMQ) -> None:
    assert operator_client.get("/actions/pause/", {"q": "mail", "action": "pause"}).status_code == 405
