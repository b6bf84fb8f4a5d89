"""The queue page's history chart: axes, a hover text per minute or hour, three ranges, from the Redis buckets."""

from __future__ import annotations

import pytest
from django.test import Client

from queues import EchoMQ
from tests.support.jobs import done_jobs, failed_jobs

pytestmark = pytest.mark.django_db


def test_the_chart_shows_this_minutes_moves_with_axes_and_hover_values(viewer_client: Client,
                                                                       console_mq: EchoMQ) -> None:
    done_jobs(console_mq, "mail", 3)
    failed_jobs(console_mq, "mail", 2)

    page = viewer_client.get("/queue/?q=mail").content.decode()

    assert 'id="queue-history"' in page and "1 hour, per minute" in page
    assert page.count('<rect class="hover"') == 60 and page.count('class="axis"') == 2
    assert page.count('<polyline class="series') == 4
    # The legend totals the range, whatever minute boundary the moves fell on.
    assert '<span class="key enqueued">enqueued</span> <b>5</b>' in page
    assert '<span class="key completed">completed</span> <b>3</b>' in page
    assert '<span class="key failed">failed for good</span> <b>2</b>' in page
    assert "UTC: enqueued " in page and "waited p50 ≤ " in page


@pytest.mark.parametrize("range_key, columns, label", [("24h", 24, "24 hours, per hour"),
                                                        ("30d", 720, "30 days, per hour")])
def test_the_longer_ranges_read_the_hour_buckets(viewer_client: Client, console_mq: EchoMQ, range_key: str,
                                                 columns: int, label: str) -> None:
    done_jobs(console_mq, "mail", 2)

    page = viewer_client.get(f"/queue/?q=mail&range={range_key}").content.decode()

    assert label in page and page.count('<rect class="hover"') == columns
    assert '<span class="key completed">completed</span> <b>2</b>' in page
    assert f'aria-current="page" class="current">{range_key}</a>' in page
