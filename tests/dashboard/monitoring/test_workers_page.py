"""The Workers page, the queue page's count of workers, and a job held by a worker that is gone."""

from __future__ import annotations

import pytest
from django.test import Client

from queues import EchoMQ, QueueKeys, moves

pytestmark = pytest.mark.django_db

FACTS = dict(ttl_ms=60_000, host="box-1", pid=4242, runtime="node 20 <emq>", concurrency=8, started_ms=1)


def test_it_lists_every_live_worker_with_what_it_holds(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")
    console_mq.enqueue("thumbs", "x")
    console_mq.run(moves.register_worker("mail", "box-1:4242", held=["a"], **FACTS))

    page = viewer_client.get("/workers/").content.decode()

    assert "box-1:4242" in page and "box-1 · 4242" in page and "node 20 &lt;emq&gt;" in page
    assert 'href="/job/?q=mail&amp;id=a"' in page
    assert ">thumbs<" not in page  # a queue without live workers is not listed
    assert "1 alive" in page


def test_the_queue_page_says_how_many_workers_serve_it(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")
    assert "workers serving it <b>0</b>" in viewer_client.get("/queue/?q=mail").content.decode()

    console_mq.run(moves.register_worker("mail", "box-1:1", held=[], **FACTS))
    console_mq.run(moves.register_worker("mail", "box-1:2", held=[], **FACTS))

    assert "workers serving it <b>2</b>" in viewer_client.get("/queue/?q=mail").content.decode()


def test_a_job_whose_worker_is_gone_says_so_and_one_whose_worker_lives_does_not(viewer_client: Client,
                                                                               console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")
    console_mq.claim("mail", lease_ms=60_000)
    worker = console_mq.job("mail", "a").text("worker")
    console_mq.run(moves.register_worker("mail", worker, held=["a"], **FACTS))

    assert 'id="worker-gone"' not in viewer_client.get("/job/?q=mail&id=a").content.decode()

    console_mq.redis.zadd(QueueKeys("mail").workers, {worker: 1})  # its entry expired long ago

    assert "held by a worker that is gone" in viewer_client.get("/job/?q=mail&id=a").content.decode()


def test_the_workers_page_needs_a_login(client: Client, console_mq: EchoMQ) -> None:
    assert client.get("/workers/").status_code == 302


def test_every_worker_is_a_row_of_one_table_with_its_queue_in_the_first_column(viewer_client: Client,
                                                                              console_mq: EchoMQ) -> None:
    for queue in ("mail", "thumbs"):
        console_mq.enqueue(queue, "x")
        console_mq.run(moves.register_worker(queue, f"box-1:{len(queue)}", held=[], **FACTS))
        console_mq.run(moves.register_worker(queue, f"box-2:{len(queue)}", held=[], **{**FACTS, "host": "box-2"}))

    page = viewer_client.get("/workers/").content.decode()

    assert page.count("<table") == 1 and page.count("<th>Queue</th>") == 1
    rows = page.split('<tbody class="worker-group">')[1:]
    assert len(rows) == 2 and all(row.count("<tr>") == 2 for row in rows)
    assert ">mail</a>" in rows[0] and ">thumbs</a>" in rows[1]


def test_the_filter_keeps_a_queue_by_its_name_or_a_worker_by_its_id_or_host(viewer_client: Client,
                                                                          console_mq: EchoMQ) -> None:
    for queue in ("mail", "thumbs"):
        console_mq.enqueue(queue, "x")
        console_mq.run(moves.register_worker(queue, f"box-1:{len(queue)}", held=[], **FACTS))
        console_mq.run(moves.register_worker(queue, f"box-2:{len(queue)}", held=[], **{**FACTS, "host": "box-2"}))

    by_queue = viewer_client.get("/workers/?q=MAI").content.decode()
    by_host = viewer_client.get("/workers/?q=box-2").content.decode()
    nothing = viewer_client.get("/workers/?q=nowhere").content.decode()

    assert ">mail</a>" in by_queue and "thumbs" not in by_queue and "2 alive matching “MAI”" in by_queue
    assert "box-1:4" not in by_host and "box-2:4" in by_host and "box-2:6" in by_host and "2 alive" in by_host
    assert 'id="no-workers"' in nothing and "matching “nowhere”" in nothing
    assert 'value="box-2"' in by_host


def test_the_queue_pages_workers_link_opens_the_page_filtered_to_its_queue(viewer_client: Client,
                                                                        console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")

    assert 'href="/workers/?q=mail">Workers</a>' in viewer_client.get("/queue/?q=mail").content.decode()


def test_a_queue_named_in_the_filter_is_on_the_first_page_however_many_queues_sort_before_it(
        viewer_client: Client, console_mq: EchoMQ) -> None:
    for n in range(1, 205):
        console_mq.enqueue(f"aaa-{n}", "x")
        console_mq.run(moves.register_worker(f"aaa-{n}", f"box-9:{n}", held=[], **FACTS))
    console_mq.enqueue("zz-target", "x")
    console_mq.run(moves.register_worker("zz-target", "box-1:1", held=[], **FACTS))

    unfiltered = viewer_client.get("/workers/").content.decode()
    filtered = viewer_client.get("/workers/?q=zz-tar").content.decode()

    assert "zz-target" not in unfiltered  # past the first page of 200 queues
    assert ">zz-target</a>" in filtered and "1 alive matching “zz-tar”" in filtered
