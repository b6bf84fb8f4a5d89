"""The overview at 10,000 queues: paged, sorted and filtered on the server, its page and every live
message bounded in bytes, its totals read in the background."""

from __future__ import annotations

import re
import time

import pytest
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.asgi import application
from dashboard.census import census_pass
from dashboard.live import MESSAGE_MAX_BYTES
from dashboard.presenters import dom_id
from dashboard.services import redis_url
from queues import EchoMQ
from queues.follower import Follower
from tests.support.jobs import failed_jobs, many_queues
from tests.support.waiting import wait_until

QUEUES = 10_000


@pytest.fixture
def fast_census(settings: SettingsWrapper) -> None:
    """A census that reads 10,000 queues in about a second (the default rate would take 50 s)."""
    settings.EMQ_CENSUS_CALLS_PER_S = 2_000
    settings.EMQ_CENSUS_PASS_S = 0.1


def shown_names(html: str) -> list[str]:
    # [^"#]: the queues table's links, not the latency table's (they end in #queue-latency).
    return re.findall(r'<td class="name"><a href="/queue/\?q=[^"#]*">([^<]*)</a>', html)


def census_complete() -> bool:
    return census_pass().census.totals().complete


def test_the_first_page_of_10000_queues_is_50_rows_well_under_200_kb(viewer_client: Client,
                                                                      console_mq: EchoMQ) -> None:
    names = many_queues(console_mq, QUEUES)

    response = viewer_client.get("/")

    assert response.status_code == 200
    assert len(response.content) < 200_000
    html = response.content.decode()
    assert shown_names(html) == names[:50]
    assert "1–50 of 10000" in html
    assert 'href="/?offset=50" class="button" rel="next"' in html
    assert 'href="/?offset=9950" class="button">Last' in html


def test_paging_sorting_and_filtering_pick_the_right_queues_of_10000(viewer_client: Client, console_mq: EchoMQ,
                                                                     fast_census: None) -> None:
    names = many_queues(console_mq, QUEUES)
    console_mq.enqueue_many("tenant-07777", ["x"] * 5)  # 8 due: the most
    failed_jobs(console_mq, "broken", 2)  # the only failures, in a 10,001st queue
    console_mq.enqueue("tenant-00123", "late", delay_ms=3_600_000)
    viewer_client.get("/")
    wait_until(census_complete, 60, "the census read every queue")

    by_due = shown_names(viewer_client.get("/?sort=due").content.decode())
    by_failed = shown_names(viewer_client.get("/?sort=failed").content.decode())
    fewest_failed = shown_names(viewer_client.get("/?sort=failed&order=asc&offset=9991").content.decode())
    page_3 = shown_names(viewer_client.get("/?offset=100&limit=20").content.decode())
    reversed_names = shown_names(viewer_client.get("/?order=desc").content.decode())
    prefix = viewer_client.get("/?filter=%5Etenant-099&sort=due&offset=50").content.decode()
    substring = shown_names(viewer_client.get("/?filter=777").content.decode())

    assert by_due[0] == "tenant-07777"
    assert by_failed == ["broken", *names[:49]]
    assert fewest_failed == [*names[-9:], "broken"]
    every = sorted([*names, "broken"])
    assert page_3 == every[100:120]
    assert reversed_names == every[::-1][:50]
    assert shown_names(prefix) == [f"tenant-099{n:02d}" for n in range(50, 100)]
    assert "51–100 of 100" in prefix
    assert substring == [n for n in names if "777" in n][:50]
    totals = census_pass().census.totals()
    assert (totals.queues, totals.read, totals.pending, totals.failed) == (QUEUES + 1, QUEUES + 1, 3 * QUEUES + 5 + 1, 2)


def test_sort_and_paging_links_keep_the_filter(viewer_client: Client, console_mq: EchoMQ) -> None:
    many_queues(console_mq, 300)

    html = viewer_client.get("/?filter=tenant-00&sort=failed").content.decode()

    links = re.findall(r'href="(/\?[^"]*)"', html)
    pager_and_sorts = [link for link in links if "offset=" in link or "sort=" in link or "order=" in link]
    assert len(pager_and_sorts) >= 6
    assert all("filter=tenant-00" in link for link in pager_and_sorts)
    assert 'name="sort" value="failed"' in html  # the filter box's form keeps the sort


def test_any_size_up_to_200_is_honoured_and_shown_selected(viewer_client: Client, console_mq: EchoMQ) -> None:
    names = many_queues(console_mq, 60)

    response = viewer_client.get("/?offset=2&limit=7")

    assert response.status_code == 200
    assert shown_names(response.content.decode()) == names[2:9]
    assert '<option value="7" selected>7</option>' in response.content.decode()


@pytest.mark.parametrize(("query", "words"), [
    ("offset=-5", "offset must be a whole number written in ASCII digits (at most 14), not &#x27;-5&#x27;"),
    ("limit=500", "limit must be a whole number of rows from 1 to 200, not &#x27;500&#x27;"),
    ("limit=x", "limit must be a whole number of rows from 1 to 200, not &#x27;x&#x27;"),
])
def test_an_offset_or_size_the_page_cannot_show_is_refused_in_words(viewer_client: Client, console_mq: EchoMQ,
                                                                    query: str, words: str) -> None:
    many_queues(console_mq, 3)

    response = viewer_client.get(f"/?{query}")

    assert response.status_code == 400
    assert words in response.content.decode()


def test_an_unknown_sort_is_refused_in_words_and_shown_escaped(viewer_client: Client, console_mq: EchoMQ) -> None:
    many_queues(console_mq, 3)

    response = viewer_client.get("/?sort=%3Cscript%3E")

    assert response.status_code == 400
    html = response.content.decode()
    assert "unknown sort &#x27;&lt;script&gt;&#x27;" in html and "<script>" not in html.split("</head>")[1]


async def connect(path: str, cookie: bytes) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://localhost"),
                                                                      (b"host", b"localhost"), (b"cookie", cookie)])
    # A handshake may wait its turn behind ten pages' first renders on a loaded machine.
    connected, _ = await communicator.connect(timeout=20)
    assert connected
    return communicator



@pytest.mark.django_db(transaction=True)
async def test_ten_overview_sockets_at_10000_queues_get_bounded_messages_and_read_only_their_queues(
        console_mq: EchoMQ, viewer_cookie: bytes, fast_census: None, caplog: pytest.LogCaptureFixture) -> None:
    names = many_queues(console_mq, QUEUES)
    paths = [f"/ws/overview/?offset={n * 1000}&limit=100" for n in range(10)]
    reverse("overview")  # the URLconf's first import takes longer than a socket's handshake may
    sockets = [await connect(path, viewer_cookie) for path in paths]
    sizes: list[int] = []
    try:
        for n, socket in enumerate(sockets):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                message = await socket.receive_from(timeout=deadline - time.monotonic())
                sizes.append(len(message.encode()))
                if 'id="overview-table"' in message and dom_id("q", names[n * 1000]) in message:
                    break
        console_mq.enqueue(names[5000], "more")
        message = ""
        while f'<tr id="{dom_id("q", names[5000])}"' not in message:
            message = await sockets[5].receive_from(timeout=10)
            sizes.append(len(message.encode()))
        follower = Follower.running(redis_url())
        assert follower is not None
        followed = follower.followed()
    finally:
        for socket in sockets:
            await socket.disconnect()
        await Follower.stop_all()

    assert max(sizes) <= MESSAGE_MAX_BYTES
    # Each page shows the 100 it asked for, from its own offset.
    assert len(followed) <= 10 * 100
    assert all(names.index(q) % 1000 < 100 for q in followed)
    assert "Too many connections" not in caplog.text
    assert "was not sent" not in caplog.text
