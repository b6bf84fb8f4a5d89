"""The cluster page: nodes with role, state and slots; each queue's slot and owner; a master down."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper
from redis.crc import key_slot

from queues import EchoMQ
from queues.cluster import queue_slot
from queues.connection import connect
from queues.keys import QUEUE_REGISTRY
from tests.support.cluster_ops import owner_of, queue_per_master
from tests.support.htmx import htmx_get
from tests.support.redis_servers import RedisClusterNodes, RedisServer, free_port


@pytest.fixture
def cluster_mq(redis_cluster: RedisClusterNodes, settings: SettingsWrapper) -> Iterator[EchoMQ]:
    for server in redis_cluster.servers:
        server.client().flushall()
    settings.EMQ_REDIS_URL = redis_cluster.url
    client = EchoMQ(connect(redis_cluster.url), actor="test")
    yield client
    client.close()


def test_it_sends_anonymous_requests_to_the_login_page(client: Client, db: None) -> None:
    response = client.get("/cluster/")

    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_a_viewer_sees_a_standalone_redis_as_one_node_that_is_not_a_cluster(
        console_mq: EchoMQ, viewer_client: Client, redis_server: RedisServer) -> None:
    console_mq.enqueue("mail", "x")

    response = viewer_client.get("/cluster/")

    html = response.content.decode()
    assert response.status_code == 200
    assert "Not a cluster" in html
    assert "master of" not in html
    assert html.count(f"127.0.0.1:{redis_server.port}") >= 2  # the node, and the owner of the queue
    assert f'<td class="num">{queue_slot("mail")}</td>' in html
    assert "16384" in html


def test_queue_names_are_shown_escaped(console_mq: EchoMQ, viewer_client: Client) -> None:
    console_mq.enqueue("<img src=x onerror=alert(1)>".replace(" ", ""), "x")

    html = viewer_client.get("/cluster/").content.decode()

    assert "<img" not in html
    assert "&lt;img" in html


def test_it_answers_503_with_the_banner_when_redis_does_not_answer(
        viewer_client: Client, settings: SettingsWrapper) -> None:
    settings.EMQ_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"

    response = viewer_client.get("/cluster/")

    assert response.status_code == 503
    assert "Redis is unreachable." in response.content.decode()


def test_it_lists_the_masters_with_their_slots_and_the_owner_of_each_queue(
        cluster_mq: EchoMQ, redis_cluster: RedisClusterNodes, viewer_client: Client) -> None:
    queues = ["mail", "sms", "billing"]
    for queue in queues:
        cluster_mq.enqueue(queue, "x")

    response = viewer_client.get("/cluster/")

    html = response.content.decode()
    assert response.status_code == 200
    assert "Cluster" in html and "Not a cluster" not in html
    assert html.count('<td class="node-state">ok</td>') == 3
    for queue in queues:
        owner = owner_of(redis_cluster, queue_slot(queue))
        row = html.split(f">{queue}</a></td>", 1)[1].split("</tr>", 1)[0]
        assert f'<td class="num">{queue_slot(queue)}</td>' in row
        assert f"127.0.0.1:{owner.port}" in row and "available" in row
    assert "Every queue's master answers." in html


def test_the_htmx_poll_gets_the_body_fragment_alone(cluster_mq: EchoMQ, viewer_client: Client) -> None:
    response = htmx_get(viewer_client, "/cluster/", "cluster-body")

    html = response.content.decode()  # type: ignore[attr-defined]
    assert html.lstrip().startswith('<div id="cluster-body"')
    assert "<html" not in html


def _victim(cluster: RedisClusterNodes, per_master: dict[int, str]) -> RedisServer:
    """A master that is neither the console's seed node nor the owner of the queue registry."""
    registry_port = owner_of(cluster, key_slot(QUEUE_REGISTRY.encode())).port
    return next(s for s in cluster.servers
                if s.port in per_master and s.port not in (registry_port, cluster.servers[0].port))


def test_with_a_master_down_the_pages_name_its_queues_and_keep_serving_the_others(
        partial_cluster: RedisClusterNodes, settings: SettingsWrapper, viewer_client: Client) -> None:
    settings.EMQ_REDIS_URL = partial_cluster.url
    mq = EchoMQ(connect(partial_cluster.url), actor="test")
    per_master = queue_per_master(partial_cluster, "q")
    for queue in per_master.values():
        mq.enqueue_many(queue, ["a", "b"])
    assert viewer_client.get("/").status_code == 200  # the console's client knows the cluster
    dead = _victim(partial_cluster, per_master)
    dead_queue = per_master[dead.port]
    alive = sorted(set(per_master.values()) - {dead_queue})

    dead.kill()
    started = time.monotonic()
    cluster_page = viewer_client.get("/cluster/")
    overview = viewer_client.get("/")
    elapsed = time.monotonic() - started

    html = cluster_page.content.decode()
    assert cluster_page.status_code == 200
    unavailable = html.split('id="unavailable-queues"', 1)[1].split("</p>", 1)[0]
    assert f">{dead_queue}</a>" in unavailable
    assert f"its master 127.0.0.1:{dead.port} is" in unavailable
    assert all(queue not in unavailable for queue in alive)
    node_row = html.split(f'<td class="mono">127.0.0.1:{dead.port}</td>', 1)[1].split("</tr>", 1)[0]
    assert '<td class="node-state">ok</td>' not in node_row
    overview_html = overview.content.decode()
    assert overview.status_code == 200
    for queue in alive:
        row = overview_html.split(f">{queue}</a>", 1)[1].split("</tr>", 1)[0]
        assert '<td class="num pending">2</td>' in row
    dead_row = overview_html.split(f">{dead_queue}</a>", 1)[1].split("</tr>", 1)[0]
    assert "unreadable: redis unreachable" in dead_row
    assert elapsed < 15
    mq.close()


def test_with_the_registrys_master_down_the_overview_still_serves_the_other_queues(
        partial_cluster: RedisClusterNodes, settings: SettingsWrapper, viewer_client: Client) -> None:
    registry_owner = owner_of(partial_cluster, key_slot(QUEUE_REGISTRY.encode()))
    seed = next(s for s in partial_cluster.servers if s is not registry_owner)
    settings.EMQ_REDIS_URL = seed.url
    mq = EchoMQ(connect(seed.url), actor="test")
    per_master = queue_per_master(partial_cluster, "r")
    for queue in per_master.values():
        mq.enqueue_many(queue, ["a", "b", "c"])
    assert viewer_client.get("/").status_code == 200  # the console reads the registry once
    lost_queue = per_master[registry_owner.port]
    alive = sorted(q for port, q in per_master.items() if port != registry_owner.port)

    registry_owner.kill()
    overview = viewer_client.get("/")
    cluster_page = viewer_client.get("/cluster/")
    mq.close()

    html = overview.content.decode()
    assert overview.status_code == 200
    assert 'id="queues-stale"' in html and "showing the one read last" in html
    for queue in alive:
        row = html.split(f">{queue}</a>", 1)[1].split("</tr>", 1)[0]
        assert '<td class="num pending">3</td>' in row
    assert "unreadable" in html.split(f">{lost_queue}</a>", 1)[1].split("</tr>", 1)[0]
    assert cluster_page.status_code == 200
    assert "showing the one read last" in cluster_page.content.decode()
