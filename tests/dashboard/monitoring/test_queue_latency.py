"""The queue page's latency panel: wait and run p50/p95/p99 per range, rates, time to drain, the objective."""

from __future__ import annotations

import pytest
from django.test import Client

from queues import EchoMQ
from queues.slo import slo_set
from tests.support.jobs import done_jobs
from tests.support.latency import early_in_a_minute, record_enqueues, record_latencies

pytestmark = pytest.mark.django_db


def test_the_panel_shows_the_percentiles_of_the_hour_with_a_chart_per_kind(viewer_client: Client,
                                                                           console_mq: EchoMQ) -> None:
    now = early_in_a_minute(console_mq, "mail")
    done_jobs(console_mq, "mail", 1)
    record_latencies(console_mq, "mail", now - 120_000, "W", [400] * 50 + [2_000] * 45 + [90_000] * 5)

    page = viewer_client.get("/queue/?q=mail").content.decode()

    assert 'id="queue-latency"' in page and page.count('class="latency-chart"') == 2
    assert page.count('<rect class="l-hover"') == 120 and page.count('<polyline class="l-series') == 6
    assert 'data-kind="wait" data-p="p50">' in page and "(101 jobs)" in page
    assert 'data-kind="wait" data-p="p99">1.5 min</b>' in page
    assert "UTC: wait p50 " in page and "not measured" in page  # the minutes without a claim


@pytest.mark.parametrize("range_key, columns", [("24h", 24), ("30d", 30)])
def test_the_longer_ranges_read_hours_and_days(viewer_client: Client, console_mq: EchoMQ, range_key: str,
                                               columns: int) -> None:
    done_jobs(console_mq, "mail", 2)

    page = viewer_client.get(f"/queue/?q=mail&range={range_key}").content.decode()

    assert page.count('<rect class="l-hover"') == 2 * columns and "(2 jobs)" in page


def test_a_draining_backlog_says_how_long_it_has_left_and_a_growing_one_says_not_draining(
        viewer_client: Client, console_mq: EchoMQ) -> None:
    now = early_in_a_minute(console_mq, "mail")
    for minute in range(1, 11):
        record_enqueues(console_mq, "mail", now - minute * 60_000, 60)
        record_latencies(console_mq, "mail", now - minute * 60_000, "W", [1000] * 120)
    console_mq.enqueue_many("mail", ["x"] * 240)
    console_mq.enqueue_many("thumbs", ["x"] * 5)

    draining = viewer_client.get("/queue/?q=mail").content.decode()
    stuck = viewer_client.get("/queue/?q=thumbs").content.decode()

    assert '<b id="time-to-drain">~4 min at the last 10 min&#x27;s rate</b>' in draining
    assert "1.00/s arriving, 2.00/s claimed" in draining
    assert '<b id="time-to-drain">not draining</b>' in stuck


def test_the_objective_that_applies_is_shown_with_its_attainment_and_burn_rates(viewer_client: Client,
                                                                                console_mq: EchoMQ) -> None:
    done_jobs(console_mq, "mail-eu", 4)
    console_mq.run(slo_set("mail-*", metric="wait", under_ms=30_000, target=95))

    page = viewer_client.get("/queue/?q=mail-eu").content.decode()

    assert 'id="latency-objective"' in page and "95 % of jobs wait under 30,000 ms over 30 d" in page
    assert "attained <b>100.00 % of 4 jobs</b>" in page and "1h <b>0.00×</b>" in page
