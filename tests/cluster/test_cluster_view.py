"""The console's view of a cluster: nodes with role and state, each queue's slot and owner, with a node down."""

from __future__ import annotations

import pytest

from queues import EchoMQ, Unavailable
from queues.cluster import cluster_view, parse_cluster_nodes, queue_placements, queue_slot
from queues.connection import connect
from tests.support.cluster_ops import eventually, queue_per_master
from tests.support.redis_servers import RedisClusterNodes
from tests.support.waiting import wait_until


def test_it_lists_every_node_with_role_state_and_slots(redis_cluster: RedisClusterNodes) -> None:
    view = cluster_view(connect(redis_cluster.url))

    assert (view.enabled, view.state) == (True, "ok")
    assert [n.role for n in view.nodes] == ["master"] * 3
    assert all(n.state == "ok" and n.link == "connected" for n in view.nodes)
    assert sum(n.slot_count for n in view.nodes) == 16384


def test_each_queue_is_placed_on_the_master_that_owns_its_slot(redis_cluster: RedisClusterNodes) -> None:
    client = connect(redis_cluster.url)
    queues = ["mail", "sms", "billing", "reports"]

    placements = queue_placements(queues, cluster_view(client))

    for queue, placement in zip(queues, placements):
        assert placement.slot == client.keyslot(f"emq:{{{queue}}}:pending")
        assert placement.address == client.get_node_from_key(f"emq:{{{queue}}}:pending").name
        assert placement.available and placement.reason == ""


def test_with_a_master_down_its_queues_are_unavailable_and_the_others_still_served(
        partial_cluster: RedisClusterNodes) -> None:
    per_master = queue_per_master(partial_cluster, "q")
    dead = partial_cluster.servers[0]
    client = connect(partial_cluster.url)
    mq = EchoMQ(client, actor="console")
    for queue in per_master.values():
        mq.enqueue(queue, "x")
    dead_queue = per_master[dead.port]

    dead.kill()
    wait_until(lambda: next(n for n in cluster_view(client).nodes if n.address.endswith(f":{dead.port}")).state
               == "fail", 20, "the others to flag the dead master")

    view = cluster_view(client)
    placements = {p.queue: p for p in queue_placements(list(per_master.values()), view)}
    assert view.state == "ok" and view.asked != f"127.0.0.1:{dead.port}"
    assert not placements[dead_queue].available
    assert placements[dead_queue].reason == f"its master 127.0.0.1:{dead.port} is fail"
    for queue in set(per_master.values()) - {dead_queue}:
        assert placements[queue].available
        assert eventually(lambda: mq.stats(queue)).counts["pending"] == 1
    with pytest.raises(Unavailable):
        mq.stats(dead_queue)


def test_a_standalone_server_owns_every_slot(redis_url: str) -> None:
    client = connect(redis_url)

    view = cluster_view(client)
    placement = queue_placements(["mail"], view)[0]

    assert (view.enabled, view.state, len(view.nodes)) == (False, "ok", 1)
    assert placement.available and placement.slot == queue_slot("mail")


def test_it_reads_migrating_slots_as_still_owned_by_their_source() -> None:
    text = ("a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-100 102 [101->-b2]\n"
            "b2 127.0.0.1:7001@17001,host master - 0 0 2 connected 101 [101-<-a1]\n"
            "c3 127.0.0.1:7002@17002 slave,fail a1 0 0 1 disconnected\n")

    nodes = parse_cluster_nodes(text)

    assert nodes[0]["slots"] == ((0, 100), (102, 102))
    assert (nodes[1]["address"], nodes[1]["slots"]) == ("127.0.0.1:7001", ((101, 101),))
    assert (nodes[2]["role"], nodes[2]["master_id"], nodes[2]["link"]) == ("replica", "a1", "disconnected")
