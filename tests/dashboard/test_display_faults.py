"""Small faults of what the pages say: a word twice, a Python repr, a control that looks live and is not,
a column that cannot be sorted."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from queues import EchoMQ
from queues.foreign import write_foreign_job

pytestmark = pytest.mark.django_db


def test_a_job_whose_attempts_are_not_a_number_quotes_them_as_text_not_as_a_python_bytes_repr(
        viewer_client: Client, console_mq: EchoMQ) -> None:
    write_foreign_job(console_mq, "legacy", "odd", state="pending", attempts="two", payload="{}")

    html = viewer_client.get("/job/?q=legacy&id=odd").content.decode()

    assert "attempts is not a number: &#x27;two&#x27;" in html
    assert "b&#x27;two&#x27;" not in html


def test_a_due_jobs_page_says_due_once(viewer_client: Client, console_mq: EchoMQ) -> None:
    job_id = console_mq.enqueue("mail", "x")

    html = viewer_client.get(f"/job/?q=mail&id={job_id}").content.decode()

    [due] = re.findall(r"<dt>Due</dt><dd><span[^>]*>([^<]*)</span>", html)
    assert due.endswith(" ago") and "due" not in due, due


def test_first_is_not_a_live_link_on_the_first_page(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")

    queue_page = viewer_client.get("/queue/?q=mail").content.decode()
    overview = viewer_client.get("/").content.decode()

    for html in (queue_page, overview):
        assert '<span class="button disabled">« First</span>' in html
        assert ">« First</a>" not in html


def test_every_count_column_of_the_overview_sorts(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("few", "x")
    for _ in range(3):
        console_mq.enqueue("many", "x", delay_ms=3_600_000)

    html = viewer_client.get("/").content.decode()
    by_delayed = viewer_client.get("/?sort=delayed").content.decode()

    for sort in ("due", "delayed", "active", "lapsed", "done", "failed"):
        assert f'data-sort="{sort}"' in html, sort
        assert viewer_client.get(f"/?sort={sort}").status_code == 200, sort
    assert by_delayed.index("?q=many") < by_delayed.index("?q=few")


def test_the_overviews_failed_total_is_coloured_as_its_column(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", max_attempts=1)
    [job] = console_mq.claim("mail")
    console_mq.fail("mail", job.id, job.token, error="boom")

    html = viewer_client.get("/").content.decode()

    assert 'class="num failed warm"' in html
    assert '<div class="stat failed warm">' in html
