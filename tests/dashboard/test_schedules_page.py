"""The schedules page: every schedule a bounded page at a time; pause, resume, run now, edit and delete asked
first and confirmed by the server, audited, for operators only (a viewer sees no button and gets 403)."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.actions.models import AuditEntry
from queues import EchoMQ
from queues.schedules import Definition, add_schedule, get_schedule
from tests.support.confirm import confirmation_token, confirmed_post
from tests.support.keyspace import keyspace_dump

pytestmark = pytest.mark.django_db
ACT = "/schedules/act/"


def nightly(mq: EchoMQ, name: str = "nightly", queue: str = "mail") -> None:
    add_schedule(mq, queue, name, Definition.of(cron="0 2 * * *", tz="Europe/Berlin", payload='{"report": 1}'))


def press(action: str, name: str = "nightly", version: int = 1, **more: str) -> dict[str, str]:
    return {"action": action, "q": "mail", "name": name, "version": str(version), **more}


def test_the_page_lists_each_schedule_with_its_ticks_and_gives_a_viewer_no_buttons(
        console_mq: EchoMQ, viewer_client: Client, operator_client: Client) -> None:
    nightly(console_mq)

    seen = viewer_client.get("/schedules/").content.decode()
    acting = operator_client.get("/schedules/").content.decode()

    assert "nightly" in seen and "cron 0 2 * * * (Europe/Berlin)" in seen and "never" in seen
    assert 'name="action"' not in seen and 'name="action" value="schedule_pause"' in acting
    assert "Run now" in acting and "/schedules/edit/?q=mail&amp;name=nightly" in acting


def test_a_schedule_offers_its_dead_mans_alert_to_operators_with_the_form_filled_in(
        console_mq: EchoMQ, viewer_client: Client, operator_client: Client) -> None:
    nightly(console_mq)
    link = "/alerts/new/?kind=schedule&amp;q=mail&amp;schedule=nightly&amp;name=nightly%20missed"

    seen, acting = (c.get("/schedules/").content.decode() for c in (viewer_client, operator_client))
    form = operator_client.get("/alerts/new/", {"kind": "schedule", "q": "mail", "schedule": "nightly",
                                                "name": "nightly missed"}).content.decode()

    assert link not in seen and link in acting
    assert '<option value="schedule" selected>' in form and 'name="schedule" value="nightly"' in form
    assert 'name="q" value="mail"' in form and 'name="name" value="nightly missed"' in form


def test_a_viewer_posting_a_press_gets_403_and_the_refusal_is_audited(console_mq: EchoMQ, viewer_client: Client) -> None:
    nightly(console_mq)
    before = keyspace_dump(console_mq.redis)

    answer = viewer_client.post(ACT, press("schedule_run"), headers={"HX-Request": "true"})

    assert answer.status_code == 403 and keyspace_dump(console_mq.redis) == before
    assert AuditEntry.objects.get().result.startswith("forbidden: You are signed in as a viewer")


def test_pause_asks_first_and_changes_nothing_until_confirmed(console_mq: EchoMQ, operator_client: Client) -> None:
    nightly(console_mq)
    before = keyspace_dump(console_mq.redis)

    asked = operator_client.post(ACT, press("schedule_pause"), headers={"HX-Request": "true"})
    unchanged = keyspace_dump(console_mq.redis)
    done = operator_client.post(ACT, {**press("schedule_pause"), "confirmation": confirmation_token(asked.content.decode())},
                                headers={"HX-Request": "true"})

    assert "Pause schedule nightly" in asked.content.decode() and unchanged == before
    assert done.status_code == 200 and "paused" in done.content.decode()
    assert get_schedule(console_mq, "mail", "nightly").paused
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.outcome, entry.queue) == ("schedule_pause", "moved", "mail")


def test_run_now_enqueues_one_job_and_its_confirmation_works_once(console_mq: EchoMQ, operator_client: Client) -> None:
    nightly(console_mq)
    asked = operator_client.post(ACT, press("schedule_run"), headers={"HX-Request": "true"})
    html = asked.content.decode()
    stamp = html.split('name="stamp" value="', 1)[1].split('"', 1)[0]
    data = {**press("schedule_run", stamp=stamp), "confirmation": confirmation_token(html)}

    first = operator_client.post(ACT, data, headers={"HX-Request": "true"})
    again = operator_client.post(ACT, data, headers={"HX-Request": "true"})

    assert first.status_code == 200 and f"enqueued nightly:run:{stamp}" in first.content.decode()
    assert again.status_code == 409 and "already been used" in again.content.decode()
    assert console_mq.stats("mail").counts["pending"] == 1
    assert console_mq.job("mail", f"nightly:run:{stamp}").payload == b'{"report": 1}'


def test_an_edit_is_confirmed_and_one_made_on_a_stale_version_is_refused_with_nothing_changed(
        console_mq: EchoMQ, operator_client: Client) -> None:
    nightly(console_mq)
    edit = press("schedule_edit", cron="", tz="", every_ms="60000", max_attempts="5", missed="skip", payload="v2")

    form = operator_client.get("/schedules/edit/?q=mail&name=nightly").content.decode()
    other = {**edit, "every_ms": "120000"}
    asked = operator_client.post(ACT, other, headers={"HX-Request": "true"})
    done = confirmed_post(operator_client, ACT, edit)
    before = keyspace_dump(console_mq.redis)
    # Confirmed after another operator's edit: the script refuses the version the page showed.
    stale = operator_client.post(ACT, {**other, "confirmation": confirmation_token(asked.content.decode())},
                                 headers={"HX-Request": "true"})
    shown_again = operator_client.post(ACT, other, headers={"HX-Request": "true"})

    assert 'value="0 2 * * *"' in form and 'value="Europe/Berlin"' in form
    assert "is now every 1 min" in done.content.decode()
    found = get_schedule(console_mq, "mail", "nightly")
    assert (found.version, found.missed, found.max_attempts, found.payload_head) == (2, "skip", 5, "v2")
    assert "changed since it was shown (now version 2)" in stale.content.decode()
    again = shown_again.content.decode()
    assert "changed since it was shown" in again and 'name="confirmation"' not in again
    assert keyspace_dump(console_mq.redis) == before
    assert [e.outcome for e in AuditEntry.objects.order_by("id")] == ["moved", "refused"]


def test_a_bad_definition_is_refused_in_words_before_anything_is_asked(console_mq: EchoMQ, operator_client: Client) -> None:
    nightly(console_mq)
    before = keyspace_dump(console_mq.redis)

    answer = operator_client.post(ACT, press("schedule_edit", cron="0 25 * * *", tz="UTC", payload="x"),
                                  headers={"HX-Request": "true"})

    assert answer.status_code == 400 and "not valid" in answer.content.decode()
    assert keyspace_dump(console_mq.redis) == before


def test_delete_is_confirmed_and_audited(console_mq: EchoMQ, operator_client: Client) -> None:
    nightly(console_mq)

    done = confirmed_post(operator_client, ACT, press("schedule_delete"))

    assert "deleted" in done.content.decode() and console_mq.redis.exists("emq:{mail}:schedule:nightly") == 0
    assert AuditEntry.objects.get().action == "schedule_delete"


def test_the_page_is_bounded_and_pages_on(console_mq: EchoMQ, viewer_client: Client) -> None:
    for i in range(55):
        add_schedule(console_mq, "mail", f"s{i:02d}", Definition.of(every_ms=60_000 * (i + 1), payload="x"))

    first = viewer_client.get("/schedules/").content.decode()
    link = first.split('<a href="?', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    second = viewer_client.get("/schedules/?" + link).content.decode()

    assert first.count('class="schedule-row') == 50 and second.count('class="schedule-row') == 5
    names = {f"s{i:02d}" for i in range(55)}
    assert {n for n in names if f">{n}<" in first} | {n for n in names if f">{n}<" in second} == names
