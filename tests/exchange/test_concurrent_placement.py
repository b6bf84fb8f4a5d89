from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import subprocess
from collections import defaultdict
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest

from exchange import place_order
from exchange.orders import client_ids_key
from queues import EchoMQ
from queues.scripts import lua_dirs

NODE = shutil.which("node") or "/usr/bin/node"
NODE_CLIENT = Path(__file__).with_name("admit_order_client.js")
FORK = multiprocessing.get_context("fork")


def request(client_order_id: str) -> bytes:
    return json.dumps({"client_order_id": client_order_id, "side": "buy", "symbol": "ACME", "type": "limit",
                       "quantity": 1, "price": "10.00", "time_in_force": "GTC"}).encode()


def _place(url: str, client_order_ids: list[str], start: Barrier, results: Any) -> None:
    mq = EchoMQ.from_url(url, actor=f"py:{os.getpid()}")
    mq.redis.ping()
    start.wait(timeout=60)
    for client_order_id in client_order_ids:
        placement = place_order(mq, request(client_order_id))
        results.put((client_order_id, placement.order_id, placement.admitted))
    mq.close()


def _run_python_placers(url: str, plans: list[list[str]], start: Barrier) -> tuple[list[Any], Any]:
    results = FORK.Queue()
    processes = [FORK.Process(target=_place, args=(url, plan, start, results)) for plan in plans]
    for process in processes:
        process.start()
    return processes, results


def _collect(processes: list[Any], results: Any, expected: int) -> list[tuple[str, str, bool]]:
    collected = [results.get(timeout=120) for _ in range(expected)]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    return collected


def test_100_concurrent_placements_with_one_client_order_id_make_exactly_one_order(mq: EchoMQ,
                                                                                 redis_url: str) -> None:
    start = FORK.Barrier(100)
    processes, results = _run_python_placers(redis_url, [["same-id"]] * 100, start)

    outcomes = _collect(processes, results, 100)

    order_ids = {order_id for _, order_id, _ in outcomes}
    assert len(order_ids) == 1
    assert sum(admitted for _, _, admitted in outcomes) == 1
    [order_id] = order_ids
    assert mq.stats("orders").counts["pending"] == 1
    assert mq.job("orders", order_id).state == "pending"
    assert mq.redis.hgetall(client_ids_key()) == {b"same-id": order_id.encode()}
    assert len(mq.events("orders")) == 1


def _start_node(port: str, client_order_ids: list[str], ids_file: Path) -> subprocess.Popen[bytes]:
    """Starts the Node client and waits until it is connected and waiting for "go" on its stdin."""
    ids_file.write_text("\n".join(client_order_ids))
    dirs = os.pathsep.join(str(d) for d in lua_dirs("exchange"))
    node = subprocess.Popen([NODE, str(NODE_CLIENT), port, dirs, str(ids_file)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert node.stdout is not None and node.stdout.readline() == b"ready\n"
    return node


@pytest.mark.skipif(not os.access(NODE, os.X_OK), reason="node is not installed")
def test_python_and_node_admitting_the_same_client_order_ids_at_once_agree_on_one_order_each(
        mq: EchoMQ, redis_url: str, tmp_path: Path) -> None:
    client_order_ids = [f"x-{i}" for i in range(200)]
    port = redis_url.rsplit(":", 1)[1].split("/")[0]
    nodes = [_start_node(port, random.sample(client_order_ids, len(client_order_ids)), tmp_path / f"ids-{i}")
             for i in range(2)]
    start = FORK.Barrier(4)
    plans = [random.sample(client_order_ids, len(client_order_ids)) for _ in range(3)]
    processes, results = _run_python_placers(redis_url, plans, start)

    for node in nodes:
        assert node.stdin is not None
        node.stdin.write(b"go\n")
        node.stdin.flush()
    start.wait(timeout=60)
    python_outcomes = _collect(processes, results, 600)
    node_outcomes = []
    for node in nodes:
        out, err = node.communicate(timeout=120)
        assert node.returncode == 0, err.decode()
        node_outcomes += [json.loads(line) for line in out.decode().splitlines()]

    told: dict[str, set[str]] = defaultdict(set)
    admitted: dict[str, int] = defaultdict(int)
    for client_order_id, order_id, was_admitted in python_outcomes:
        told[client_order_id].add(order_id)
        admitted[client_order_id] += was_admitted
    for outcome in node_outcomes:
        told[outcome["client_order_id"]].add(outcome["order_id"])
        admitted[outcome["client_order_id"]] += outcome["outcome"] == "ADMITTED"
    assert len(node_outcomes) == 400
    assert all(len(told[c]) == 1 for c in client_order_ids)
    assert all(admitted[c] == 1 for c in client_order_ids)
    index = {k.decode(): v.decode() for k, v in mq.redis.hgetall(client_ids_key()).items()}
    assert index == {c: next(iter(told[c])) for c in client_order_ids}
    assert mq.stats("orders").counts["pending"] == 200
    assert mq.redis.xlen("emq:{orders}:events") == 200


def _node_admit(port: str, client_order_ids: list[str], ids_file: Path) -> list[dict[str, str]]:
    node = _start_node(port, client_order_ids, ids_file)
    out, err = node.communicate(b"go\n", timeout=60)
    assert node.returncode == 0, err.decode()
    return [json.loads(line) for line in out.decode().splitlines()]


@pytest.mark.skipif(not os.access(NODE, os.X_OK), reason="node is not installed")
def test_an_order_admitted_by_node_is_an_ordinary_job_and_python_retries_get_its_id(
        mq: EchoMQ, redis_url: str, tmp_path: Path) -> None:
    port = redis_url.rsplit(":", 1)[1].split("/")[0]
    [by_node] = _node_admit(port, ["from-node"], tmp_path / "ids")

    retry = place_order(mq, request("from-node"))

    assert by_node["outcome"] == "ADMITTED"
    assert (retry.order_id, retry.admitted) == (by_node["order_id"], False)
    job = mq.job("orders", by_node["order_id"])
    assert job.warnings == [] and json.loads(job.payload)["side"] == "sell"
    [claimed] = mq.claim("orders")
    assert claimed.id == by_node["order_id"]


@pytest.mark.skipif(not os.access(NODE, os.X_OK), reason="node is not installed")
def test_node_retrying_an_order_admitted_by_python_is_told_pythons_order_id(
        mq: EchoMQ, redis_url: str, tmp_path: Path) -> None:
    port = redis_url.rsplit(":", 1)[1].split("/")[0]
    first = place_order(mq, request("from-python"))

    [by_node] = _node_admit(port, ["from-python"], tmp_path / "ids")

    assert by_node == {"client_order_id": "from-python", "order_id": first.order_id, "outcome": "DUPLICATE"}
    assert mq.stats("orders").counts["pending"] == 1
