"""One URL, any transport: redis://, rediss:// and unix://, standalone or cluster."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from queues import EchoMQ
from queues.connection import is_cluster_client
from tests.support.redis_servers import RedisServer, free_port


def _lifecycle(mq: EchoMQ) -> str:
    mq.enqueue("q", "x", job_id="a")
    [job] = mq.claim("q")
    mq.complete("q", "a", job.token)
    return mq.job("q", "a").state


@pytest.fixture
def unix_server(tmp_path: Path) -> Iterator[tuple[RedisServer, Path]]:
    socket_path = tmp_path / "redis.sock"
    server = RedisServer(extra_args=["--unixsocket", str(socket_path), "--unixsocketperm", "700"]).start()
    yield server, socket_path
    server.cleanup()


def test_a_unix_socket_url_works(unix_server: tuple[RedisServer, Path]) -> None:
    _, socket_path = unix_server
    mq = EchoMQ.from_url(f"unix://{socket_path}?db=0")
    try:
        assert _lifecycle(mq) == "done"
    finally:
        mq.close()


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    tls_port = free_port()
    server = RedisServer(extra_args=["--tls-port", str(tls_port), "--tls-cert-file", str(cert), "--tls-key-file",
                                     str(key), "--tls-ca-cert-file", str(cert), "--tls-auth-clients", "no"]).start()
    yield tls_port, cert
    server.cleanup()


def test_a_tls_url_works(tls_server: tuple[int, Path]) -> None:
    port, cert = tls_server
    mq = EchoMQ.from_url(f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={cert}")
    try:
        assert _lifecycle(mq) == "done"
    finally:
        mq.close()


def test_a_cluster_is_detected_from_the_url_alone(redis_cluster) -> None:  # type: ignore[no-untyped-def]
    mq = EchoMQ.from_url(redis_cluster.url)
    try:
        assert is_cluster_client(mq.redis)
        mq.redis.delete("emq:{q}:job:a", "emq:{q}:done", "emq:{q}:pending", "emq:{q}:active", "emq:{q}:events")
        assert _lifecycle(mq) == "done"
    finally:
        mq.close()


def test_moves_are_never_resent_by_redis_py(redis_url: str) -> None:
    # A claim that timed out may have run: redis-py must not send it again on
    # its own, so the client is built with no retries at all.
    mq = EchoMQ.from_url(redis_url)
    try:
        assert mq.redis.get_retry().get_retries() == 0
    finally:
        mq.close()


def test_an_unreachable_server_is_reported_not_retried(redis_server: RedisServer) -> None:
    from queues import Unavailable

    mq = EchoMQ.from_url(redis_server.url)
    redis_server.stop()
    try:
        with pytest.raises(Unavailable):
            mq.claim("q")
    finally:
        redis_server.start()
        mq.close()


def test_discovery_finds_a_queue_another_runtime_never_registered(any_mq: EchoMQ) -> None:
    any_mq.redis.zadd("emq:{foreign}:pending", {"x": 1})

    assert "foreign" not in any_mq.queues()
    assert "foreign" in any_mq.discover_queues()
    assert "foreign" in any_mq.queues()


@pytest.mark.parametrize("version", ["6.2.14", "5.0.7", "", "x.y"])
def test_a_server_older_than_redis_7_is_refused_with_the_reason(version: str) -> None:
    from queues import UnsupportedServer
    from queues.connection import check_version

    with pytest.raises(UnsupportedServer, match="Redis 7.0 or newer"):
        check_version({"redis_version": version})


def test_redis_7_and_valkey_are_accepted_and_the_connection_checks_the_server(redis_url: str) -> None:
    from queues.connection import check_version, connect

    for version in ("7.0.0", "7.2.4", "8.0.1"):
        check_version({"redis_version": version})
    assert connect(redis_url).ping()


def test_many_threads_on_one_client_wait_for_its_bounded_pool_instead_of_failing(redis_url: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from queues.connection import connect, max_connections

    client, watcher = connect(redis_url), connect(redis_url)
    count = max_connections() + 20

    with ThreadPoolExecutor(max_workers=count) as threads:
        results = list(threads.map(lambda n: client.blpop([f"nothing-{n}"], timeout=0.2), range(count)))

    assert results == [None] * count
    # Every connection the client opened is still open in its pool: the watcher's own and at most the bound.
    assert watcher.info("clients")["connected_clients"] <= max_connections() + 1
    client.close()
    watcher.close()


async def test_many_tasks_on_one_asyncio_client_wait_for_its_bounded_pool(redis_url: str) -> None:
    import asyncio

    from queues.connection import connect, connect_async, max_connections

    client, watcher = connect_async(redis_url), connect(redis_url)
    count = max_connections() + 20

    results = await asyncio.gather(*(client.blpop([f"nothing-{n}"], timeout=0.2) for n in range(count)))

    assert results == [None] * count
    assert watcher.info("clients")["connected_clients"] <= max_connections() + 1
    await client.aclose()
    watcher.close()



@pytest.mark.parametrize("where", ["standalone", "cluster"])
async def test_the_asyncio_client_is_made_and_used_without_a_warning(request: pytest.FixtureRequest,
                                                                    where: str) -> None:
    import warnings

    from queues.connection import connect_async

    url = request.getfixturevalue("redis_url") if where == "standalone" else request.getfixturevalue(
        "redis_cluster").url
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        client = connect_async(url)
        assert await client.ping()
        await client.aclose()
