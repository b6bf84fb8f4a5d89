"""Live pages over odd data: a junk event, an odd job or an unknown path never stops or breaks a socket."""

from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator

from dashboard.asgi import application
from queues import EchoMQ
from tests.support.odd_keyspace import REGISTRY, invisible_shown, prefix, write_job
from tests.support.sockets import connect, receive_until

pytestmark = pytest.mark.django_db(transaction=True)




async def test_a_socket_to_a_path_the_console_does_not_serve_is_closed_with_4404(operator_cookie: bytes,
                                                                                 console_mq: EchoMQ) -> None:
    communicator = WebsocketCommunicator(application, "/ws/no-such-page/?q=a",
                                         headers=[(b"origin", b"http://localhost"), (b"host", b"localhost"),
                                                  (b"cookie", operator_cookie)])
    connected, _ = await communicator.connect(timeout=20)  # a bound, not a speed: 1 s is not enough at load 20

    assert connected and await communicator.receive_output(timeout=2) == {"type": "websocket.close", "code": 4404}


async def test_an_event_with_a_job_id_that_is_not_utf8_does_not_stop_the_other_queues_updates(
        console_mq: EchoMQ, operator_cookie: bytes, stop_followers: None) -> None:
    console_mq.enqueue("junk", "{}", job_id="j0")
    console_mq.enqueue("mail", "{}", job_id="j1")
    junk_page = await connect("/ws/job/?q=junk&id=j0", operator_cookie)
    mail_page = await connect("/ws/job/?q=mail&id=j1", operator_cookie)
    await receive_until(junk_page, lambda m: 'id="job-core"' in m)
    await receive_until(mail_page, lambda m: 'id="job-core"' in m)

    console_mq.redis.xadd(prefix(b"junk") + b"events", {b"move": b"claim\xff", b"id": b"j\xff0", b"ts": "²".encode()})
    console_mq.redis.xadd(prefix(b"junk") + b"events", {b"nothing": b"useful"})
    claimed = console_mq.claim("mail")[0]
    console_mq.complete("mail", "j1", claimed.token)

    await receive_until(mail_page, lambda m: "badge big done" in m, timeout=10)
    await junk_page.disconnect()
    await mail_page.disconnect()


async def test_the_pages_of_an_odd_job_and_its_queue_stay_live(console_mq: EchoMQ, operator_cookie: bytes,
                                                               stop_followers: None) -> None:
    raw = console_mq.redis
    write_job(raw, b"mail", b"odd\xff", b"pending", float("inf"), {b"payload": b"[" * 5000 + b"]" * 5000})
    write_job(raw, b"mail", b"bidi\xe2\x80\xaeevil", b"done ", float("-inf"), {b"attempts": b"\xd9\xa1"},
              in_set=b"done")
    console_mq.enqueue("mail", "{}", job_id="j1")
    queue_page = await connect("/ws/queue/?q=mail&state=pending", operator_cookie)
    job_page = await connect("/ws/job/?q=mail&id=bidi%E2%80%AEevil", operator_cookie)
    done_page = await connect("/ws/queue/?q=mail&state=done", operator_cookie)

    first = await receive_until(queue_page, lambda m: 'id="queue-jobs"' in m)
    assert r"odd\xff" in first
    job_core = await receive_until(job_page, lambda m: 'id="job-core"' in m)
    assert r"bidi\u202eevil" in job_core and not invisible_shown(job_core)
    assert "unknown state" in job_core
    done_rows = await receive_until(done_page, lambda m: 'id="queue-jobs"' in m)
    assert r"bidi\u202eevil" in done_rows and "attempts is not a number" in done_rows
    assert not invisible_shown(done_rows)

    claimed = console_mq.claim("mail")[0]
    console_mq.complete("mail", claimed.id, claimed.token)

    await receive_until(done_page, lambda m: 'id="queue-jobs"' in m and "j1" in m, timeout=10)
    for communicator in (queue_page, job_page, done_page):
        await communicator.disconnect()


async def test_a_registry_entry_that_is_not_a_name_leaves_the_overview_live(console_mq: EchoMQ,
                                                                             operator_cookie: bytes,
                                                                             stop_followers: None) -> None:
    console_mq.redis.sadd(REGISTRY, b"bad name", b"caf\xe9", b"emq")
    console_mq.enqueue("mail", "{}", job_id="j1")
    overview = await connect("/ws/overview/", operator_cookie)
    await receive_until(overview, lambda m: "mail" in m)

    console_mq.enqueue("thumbs", "{}", job_id="t1")

    await receive_until(overview, lambda m: "thumbs" in m, timeout=10)
    await overview.disconnect()
