"""Re-run from the job page: a done job's button asks first (a confirmation the server checks), then moves it."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.actions.models import AuditEntry
from queues import EchoMQ
from tests.support.confirm import confirmation_token
from tests.support.jobs import done_jobs
from tests.support.keyspace import keyspace_dump

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HX-Request": "true"}


def test_a_done_job_is_re_run_only_once_its_confirmation_comes_back(operator_client: Client,
                                                                  console_mq: EchoMQ) -> None:
    [job_id] = done_jobs(console_mq, "mail", 1)
    assert 'name="move" value="rerun"' in operator_client.get(f"/job/?q=mail&id={job_id}").content.decode()
    form = {"q": "mail", "id": job_id, "move": "rerun", "state": "done", "attempts": "1"}
    before = keyspace_dump(console_mq.redis)

    asked = operator_client.post("/actions/job/", form, headers=HTMX)

    text = asked.content.decode()
    assert f"Run job {job_id} (done, attempts 1) again in" in text and "Yes, run it again" in text
    assert keyspace_dump(console_mq.redis) == before
    forged = operator_client.post("/actions/job/", {**form, "confirmation": "forged"}, headers=HTMX)
    assert forged.status_code == 409 and keyspace_dump(console_mq.redis) == before

    done = operator_client.post("/actions/job/", {**form, "confirmation": confirmation_token(text)}, headers=HTMX)

    assert done.status_code == 200
    assert f"re-run: job {job_id} is now pending (attempts 1)" in done.content.decode()
    assert console_mq.job("mail", job_id).state == "pending"
    assert AuditEntry.objects.get(action="rerun", outcome="moved").jobs[0]["state"] == "done"
    assert "re-run a job" in operator_client.get("/audit/").content.decode()
