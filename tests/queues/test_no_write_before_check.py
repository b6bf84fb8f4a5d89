"""Every script, on any keyspace and any ARGV: a reply that says "nothing happened" changed nothing.

Redis does not roll back a script that errors half-way, so each script must
check every argument and every key's type before its first write. Hypothesis
writes odd keyspaces (keys of the wrong type, junk states and attempts, ±inf
scores, foreign histories) and odd arguments (inf, nan, 1e3, 0x3, ' 5', +5,
numbers past 14 digits, attempts at 1025) and runs the real script on a real
redis-server; an error reply, REFUSED, DUPLICATE, PAUSED, ALREADY or NOT_PAUSED must leave every key
byte-identical (DUMP before and after).
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings, strategies as st

from queues import EchoMQ, QueueKeys
from queues.scripts import MOVES, READS, script

KEYS = QueueKeys("q")
IDS = ["a", "b", "c"]
CLAIM_ID = "c1"

numbers = st.sampled_from(["0", "1", "2", "3", "1024", "1025", "-1", "99999999999999", "100000000000000",
                           "1e3", "inf", "-inf", "nan", "0x3", " 5", "+5", "5 ", "1.5", "", "x", "١٢٣"])
texts = st.sampled_from(["", "worker", "é" * 3000, "\x1b[31m", "a\nb\tc%", "\u202eevil"])
states = st.sampled_from(["pending", "active", "done", "failed", "done ", "", "wrongtype:string", "gone"])
field_values = st.one_of(numbers, texts, states, st.binary(max_size=20))


@st.composite
def job_hash(draw: st.DrawFn) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if draw(st.booleans()):
        fields["state"] = draw(states)
    if draw(st.booleans()):
        fields["attempts"] = draw(numbers)
    if draw(st.booleans()):
        fields["claim_id"] = draw(st.sampled_from([CLAIM_ID, "c2", ""]))
    if draw(st.booleans()):
        fields["max_attempts"] = draw(numbers)
    if draw(st.booleans()):
        fields["payload"] = draw(st.one_of(texts, st.binary(max_size=40)))
    if draw(st.booleans()):
        fields["history"] = draw(st.one_of(texts, st.just("1\tclaim\tactive\t1\tw")))
    fields.update(draw(st.dictionaries(st.sampled_from(["last_error", "preview", "note"]), field_values, max_size=2)))
    return fields or {"note": "x"}


scores = st.one_of(st.integers(min_value=-10, max_value=2 * 10**12), st.sampled_from([float("inf"), float("-inf")]))


@st.composite
def keyspace(draw: st.DrawFn) -> list[tuple[str, str, Any]]:
    """(key, type, content) to write: the queue's sets and stream, its job keys, the order index."""
    entries: list[tuple[str, str, Any]] = []
    for key in (KEYS.pending, KEYS.active, KEYS.done, KEYS.failed):
        kind = draw(st.sampled_from(["zset", "zset", "zset", "none", "string", "hash"]))
        entries.append((key, kind, draw(st.dictionaries(st.sampled_from(IDS), scores, max_size=3))))
    entries.append((KEYS.events, draw(st.sampled_from(["stream", "none", "none", "string", "zset"])), None))
    for job_id in IDS:
        kind = draw(st.sampled_from(["hash", "hash", "hash", "none", "string", "list"]))
        entries.append((KEYS.job(job_id), kind, draw(job_hash())))
    entries.append((KEYS.prefix + "client_ids", draw(st.sampled_from(["none", "hash", "string"])), {"k-1": "a"}))
    entries.append((KEYS.workers, draw(st.sampled_from(["none", "zset", "string"])), {"w:1": draw(scores)}))
    entries.append((KEYS.worker("w:1"), draw(st.sampled_from(["none", "hash", "string"])), {"host": "h", "pid": "1"}))
    entries.append((KEYS.prefix + "m:1", draw(st.sampled_from(["none", "hash", "string"])), {"e": "1"}))
    entries.append((KEYS.counts, draw(st.sampled_from(["none", "none", "hash", "string"])), {"complete": "3"}))
    entries.append((KEYS.paused, draw(st.sampled_from(["none", "none", "hash", "string"])),
                    {"reason": draw(texts), "actor": "a", "since_ms": draw(numbers)}))
    return entries


def _write(client: redis.Redis, entries: list[tuple[str, str, Any]]) -> None:
    client.flushall()
    for key, kind, content in entries:
        if kind == "zset":
            if content:
                client.zadd(key, content)
            else:
                client.zadd(key, {"placeholder": 1})
        elif kind == "hash":
            fields = content if isinstance(content, dict) and content else {"f": "v"}
            client.hset(key, mapping=fields)
            # A large hash is a hashtable that rehashes a step on every lookup, which reorders its DUMP
            # without any write: finish the rehash first, so that DUMP changes only when data does.
            pipe = client.pipeline(transaction=False)
            for _ in range(64):
                pipe.hexists(key, "state")
            pipe.execute()
        elif kind == "stream":
            client.xadd(key, {"move": "enqueue", "id": "a"})
        elif kind == "string":
            client.set(key, "text")
        elif kind == "list":
            client.rpush(key, "item")


def _dump(client: redis.Redis) -> dict[bytes, bytes | None]:
    return {key: client.dump(key) for key in sorted(client.scan_iter(count=1000))}


def argv_for(name: str) -> st.SearchStrategy[list[Any]]:
    """Plausible arguments for each script, each position sometimes valid and sometimes junk."""
    job_id = st.sampled_from(IDS + [""])
    actor = texts
    attempts = st.one_of(st.sampled_from(["1", "2", "1024", "1025"]), numbers)
    claim_id = st.sampled_from([CLAIM_ID, "c2", "", "C1", "c1 "])
    lease = st.one_of(st.sampled_from(["1", "30000"]), numbers)
    limit = st.one_of(st.sampled_from(["1", "200", "1000", "1001"]), numbers)
    seen_state = st.one_of(states, st.just("pending"))
    seen_attempts = st.one_of(st.just(""), attempts)
    fixed: dict[str, list[st.SearchStrategy[Any]]] = {
        "enqueue": [job_id, texts, numbers, numbers, actor],
        "claim": [lease, st.sampled_from(["ab12", "", "AB", "x"]), actor, limit],
        "extend": [job_id, attempts, claim_id, lease, actor],
        "complete": [job_id, attempts, claim_id, actor],
        "fail": [job_id, attempts, claim_id, texts, st.one_of(st.just("0"), numbers), actor],
        "release": [job_id, attempts, claim_id, actor],
        "retry": [job_id, seen_state, seen_attempts, numbers, actor],
        "recover": [job_id, seen_state, seen_attempts, actor],
        "promote": [job_id, seen_state, seen_attempts, actor],
        "cancel": [job_id, seen_state, seen_attempts, actor],
        "delete": [job_id, seen_state, seen_attempts, actor],
        "recover_expired": [limit, actor, numbers],
        "retry_failed": [limit, numbers, actor, numbers, numbers],
        "purge": [st.sampled_from(["done", "failed", "active", ""]), numbers, limit, actor, numbers],
        "exchange:admit_order": [st.just("place"), st.just("1"), st.just("ORD-01J9Z8ZQ4W3V2T1S0R9Q8P7N6M"), st.just("k-1"),
                        st.sampled_from(['{"command":"place","version":1,"order_id":"ORD-01J9Z8ZQ4W3V2T1S0R9Q8P7N6M",'
                                         '"client_order_id":"k-1"}', "[]", "{"]), numbers, actor],
        "stats": [],
        "page": [states, st.sampled_from(["asc", "desc", "up"]), st.sampled_from(["offset", "after", "before", "x"]),
                 numbers, job_id, limit, numbers],
        "job": [job_id, numbers],
        "payload": [job_id, numbers],
        "history": [job_id],
        "clock": [],
        "check": [st.sampled_from(["pending", "hashes", "x"]), st.just("0"), limit, st.just(KEYS.prefix + "job:*")],
        "count_older": [states, numbers],
        "counts": [],
        "workers": [limit],
        "series": [st.sampled_from(["m", "h", "x", ""]), numbers, limit],
        "histogram": [st.sampled_from(["m", "h", "x", ""]), numbers, limit, limit],
        "register_worker": [st.sampled_from(["w:1", "", "a b", "{x}"]), lease, texts, numbers, texts, numbers,
                            numbers, numbers, texts],
        "unregister_worker": [st.sampled_from(["w:1", ""])],
        "note_refusal": [st.sampled_from(["w:1", "", "a b"]), lease, st.sampled_from(["oom", "script_error", "x"]),
                         texts],
        "why_queue": [],
        "why_job": [job_id],
        "pause": [texts, actor],
        "resume": [actor],
        "search": [states, st.sampled_from(["asc", "desc", "x"]), st.sampled_from(["", "1", "inf"]), job_id,
                   st.sampled_from(["-inf", "0", "x"]), st.sampled_from(["+inf", "now", "5"]), limit, numbers, limit,
                   st.sampled_from(["payload", "error", "worker", "group", "id_prefix", "json", "x"]), texts],
        "groups": [limit, st.sampled_from(["", "0123456789ab", "x"])],
        "group_failed": [numbers, limit],
        "signature": [texts, texts],
    }
    if name == "enqueue_many":
        return st.tuples(numbers, numbers, actor, st.lists(st.tuples(job_id, texts), max_size=4)).map(
            lambda t: [t[0], t[1], t[2], *[v for pair in t[3] for v in pair]])
    if name == "states":
        return st.lists(job_id, max_size=6)
    if name == "finish_claim":
        outcome = st.sampled_from(["complete", "fail", "fail", "done", ""])
        return st.tuples(actor, lease, st.sampled_from(["ab12", "", "AB"]), limit, st.one_of(st.just("0"), numbers),
                         st.lists(st.tuples(job_id, attempts, claim_id, outcome, texts), max_size=3)).map(
            lambda t: [*t[:5], *[v for job in t[5] for v in job]])
    if name == "complete_many":
        return st.tuples(actor, st.lists(st.tuples(job_id, attempts, claim_id), max_size=4)).map(
            lambda t: [t[0], *[v for triple in t[1] for v in triple]])
    # Sometimes an argument is missing at the end, or one too many.
    return st.tuples(*fixed[name]).map(list).flatmap(
        lambda args: st.sampled_from([args, args, args, args[:-1], args + ["extra"]]))


def keys_for(name: str, argv: list[Any]) -> list[str]:
    keys = [KEYS.pending, KEYS.active, KEYS.done, KEYS.failed, KEYS.events]
    picks = name in ("claim", "enqueue_many", "complete_many", "finish_claim", "recover_expired", "retry_failed",
                     "purge", "stats", "page", "clock", "check", "count_older", "states", "pause", "resume", "counts", "workers",
                     "register_worker", "unregister_worker", "search", "groups", "signature", "series", "histogram",
                     "group_failed", "note_refusal", "why_queue")
    if name == "exchange:admit_order":
        return keys + [KEYS.prefix + "job:" + str(argv[2]), KEYS.prefix + "client_ids"]
    if picks or not argv:
        return keys + [KEYS.prefix]
    return keys + [KEYS.prefix + "job:" + str(argv[0])]


NOTHING_HAPPENED = (b"REFUSED", b"DUPLICATE", b"PAUSED", b"ALREADY", b"NOT_PAUSED")


# Scripts of other packages, run as moves through queues (the exchange's admission).
CALLER_SCRIPTS = ("exchange:admit_order",)


@pytest.mark.parametrize("name", [*MOVES, *READS, *CALLER_SCRIPTS])
def test_a_script_that_answers_nothing_happened_changed_nothing(mq: EchoMQ, name: str) -> None:
    client: redis.Redis = mq.redis  # type: ignore[assignment]
    source = script(name).source

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(entries=keyspace(), argv=argv_for(name))
    def check(entries: list[tuple[str, str, Any]], argv: list[Any]) -> None:
        _write(client, entries)
        keys = keys_for(name, argv)
        before = _dump(client)
        try:
            reply = client.eval(source, len(keys), *keys, *argv)
        except redis.exceptions.ResponseError as error:
            assert _dump(client) == before, f"{name} wrote, then errored: {error}"
            return
        if isinstance(reply, list) and reply and reply[0] in NOTHING_HAPPENED:
            assert _dump(client) == before, f"{name} wrote, then answered {reply[:2]}"
        if name == "finish_claim" and isinstance(reply, list) and len(reply) > 1 and isinstance(reply[1], list) \
                and reply[1][0] == b"PAUSED" and all(answer[0] == b"REFUSED" for answer in reply[2:]):
            # Every report refused and the claim half paused: the joined move did nothing.
            assert _dump(client) == before, f"{name} wrote, then refused every report and answered PAUSED"
        if name in READS:
            assert _dump(client) == before, f"the read {name} wrote"

    check()
