"""The audit log: a row per action with who, when, queue, jobs as shown, outcome; a page with filters; the admin."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from dashboard.actions.models import AuditEntry
from queues import EchoMQ
from tests.support.htmx import htmx_get, htmx_post


def record(username: str, queue: str, action: str, outcome: str, **fields: object) -> AuditEntry:
    return AuditEntry.objects.create(username=username, queue=queue, action=action, outcome=outcome,
                                     scope=fields.pop("scope", "job"), **fields)


def test_the_log_filters_by_user_queue_and_action(viewer_client: Client) -> None:
    record("otto", "mail", "retry", "moved", result="retried: job m1 is now pending (attempts 1)")
    record("otto", "billing", "cancel", "refused", result="refused: job b1 is now done (attempts 3)")
    record("ada", "mail", "delete", "moved", result="deleted: job m2 is now deleted (attempts 0)")

    def results(query: str) -> set[str]:
        return {e.result.split(":")[1].split(" is")[0].strip()
                for e in viewer_client.get(f"/audit/?{query}").context["page"]}

    assert results("") == {"job m1", "job b1", "job m2"}
    assert results("user=otto") == {"job m1", "job b1"}
    assert results("queue=mail") == {"job m1", "job m2"}
    assert results("action=cancel") == {"job b1"}
    assert results("user=otto&queue=mail&action=retry") == {"job m1"}
    assert results("outcome=refused") == {"job b1"}


def test_the_log_shows_who_what_the_jobs_as_shown_and_the_outcome(viewer_client: Client) -> None:
    record("otto", "mail", "retry", "refused", jobs=[{"id": "m1", "state": "failed", "attempts": "2"}],
           result="refused: job m1 is now done (attempts 3)")

    html = viewer_client.get("/audit/").content.decode()

    for text in ("otto", "retry", "mail", "m1", "(failed, attempts 2)", "refused",
                 "refused: job m1 is now done (attempts 3)"):
        assert text in html


def test_a_bulk_row_shows_its_tally_and_links_to_the_run(viewer_client: Client) -> None:
    entry = record("otto", "mail", "retry_all", "cancelled", scope="queue", moved=7, skipped=2, missing=1,
                   parameters={"from_state": "failed"})

    html = viewer_client.get("/audit/").content.decode()

    assert "7 moved, 2 skipped because they had moved on, 1 missing" in html
    assert f'href="/actions/runs/{entry.pk}/"' in html and "every failed job" in html


def test_the_filter_form_refreshes_only_the_rows_through_htmx(viewer_client: Client) -> None:
    record("otto", "mail", "retry", "moved")

    response = htmx_get(viewer_client, "/audit/?user=otto", "audit-rows")

    html = response.content.decode()  # type: ignore[attr-defined]
    assert html.lstrip().startswith('<div id="audit-rows">') and "<html" not in html


def test_the_log_pages_through_many_rows(viewer_client: Client) -> None:
    AuditEntry.objects.bulk_create(AuditEntry(username="otto", queue="mail", action="retry", outcome="moved",
                                              scope="job") for _ in range(120))

    first = viewer_client.get("/audit/").context["page"]
    last = viewer_client.get("/audit/?page=3").context["page"]

    assert len(first) == 50 and len(last) == 20 and not last.has_next()


def test_an_ordinary_action_writes_its_row_with_every_field(operator_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")

    htmx_post(operator_client, "/actions/job/", {"q": "mail", "id": "a", "move": "cancel", "state": "pending",
                                                 "attempts": "0"})

    entry = AuditEntry.objects.get()
    assert entry.user is not None and entry.user.username == "otto" and entry.username == "otto"
    assert entry.created_at is not None and entry.finished_at is not None
    assert (entry.queue, entry.action, entry.scope, entry.outcome) == ("mail", "cancel", "job", "moved")
    assert entry.expected == "pending (attempts 0)"


def test_the_admin_lists_the_log_read_only(db: None, console_mq: EchoMQ) -> None:
    admin = User.objects.create_superuser("root", password="root-password")
    entry = record("otto", "mail", "retry", "moved", result="retried: job a is now pending (attempts 1)")
    client = Client()
    client.force_login(admin)

    listing = client.get("/admin/actions/auditentry/?action__exact=retry")
    change = client.get(f"/admin/actions/auditentry/{entry.pk}/change/")

    assert listing.status_code == 200 and b"retried: job a is now pending" in listing.content
    assert client.get("/admin/actions/auditentry/add/").status_code == 403
    assert change.status_code == 200 and b'name="_save"' not in change.content
    assert client.post(f"/admin/actions/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AuditEntry.objects.filter(pk=entry.pk).exists()
