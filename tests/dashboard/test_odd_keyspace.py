"""Any keyspace, as buggy writers in other languages leave it: no page, fragment, API read, CLI command or
live push answers 5xx or stops, and what the console shows of it holds no invisible character.

Hypothesis writes a queue's keys raw into a real redis-server: ids, field names and values that are
not UTF-8 or hold bidi and zero-width characters; ±inf scores; each emq key sometimes of another type;
registry entries that are not queue names; stream entries with ``ts=²``, ids that are not UTF-8 and
missing fields; huge and deeply nested JSON payloads; job hashes missing their core fields. Then an
operator requests every page and fragment, the CLI runs every read, and a follower renders every live
page and reads the junk events while another queue's page must keep getting its updates.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from typing import Any
from urllib.parse import urlencode

import pytest
import redis
from django.test import Client
from hypothesis import HealthCheck, given, settings, strategies as st

from dashboard import presenters
from dashboard.live import JobPage, OverviewPage, QueuePage
from queues import STATES, EchoMQ
from queues.cli import main as emq
from queues.follower import Follower, Update
from queues.visible import INVISIBLE
from tests.support.odd_keyspace import REGISTRY, as_str, console_urls, deep_json, invisible_shown, prefix, server_errors

pytestmark = pytest.mark.django_db

QUEUE = b"mail"
ids = st.sampled_from([b"a", b"b", b"j\xff", b"bidi\xe2\x80\xaeevil", b"zero\xe2\x80\x8bwidth", b"x" * 200,
                       b"esc\x1b[31m", "ünï".encode()])
texts = st.sampled_from([b"", b"worker-1", b"\xff\xfe", "é".encode() * 3000, b"\x1b[2J", "\u202etidua".encode(),
                         "a\u200bb".encode(), b"a\nb\tc%0A", "²".encode(), "١٢٣".encode()])
numbers = st.sampled_from([b"0", b"1", b"1024", b"-1", b"inf", b"nan", b"1e3", b"0x3", b" 5", "²".encode(),
                           "١٢٣".encode(), b"9" * 30, b"", b"x"])
states = st.sampled_from([b"pending", b"active", b"done", b"failed", b"done ", b"", b"\xff", "d\u202eone".encode()])
payloads = st.one_of(texts, st.sampled_from([b"{}", b'{"a": 1}', deep_json(), deep_json(64 * 1024),
                                             b'{"x": "' + b"y" * 200_000 + b'"}', b"\x00\x01\x02", b"[1, 2"]))
scores = st.one_of(st.integers(min_value=-10**13, max_value=10**13), st.sampled_from([float("inf"), float("-inf")]))
kinds = st.sampled_from(["string", "list", "set", "hash", "zset", "stream"])


@st.composite
def job_fields(draw: st.DrawFn) -> dict[bytes, bytes]:
    fields: dict[bytes, bytes] = {}
    for name, values in ((b"state", states), (b"attempts", numbers), (b"payload", payloads),
                         (b"last_error", texts), (b"worker", texts), (b"history", texts),
                         (b"created_at", numbers), (b"finished_at", numbers), (b"preview", texts),
                         (b"payload_length", numbers), (b"\xfdname", texts), ("\u202eodd".encode(), texts)):
        if draw(st.booleans()):
            fields[name] = draw(values)
    return fields or {b"note": b"x"}


@st.composite
def events(draw: st.DrawFn) -> list[dict[bytes, bytes]]:
    entries = []
    for _ in range(draw(st.integers(0, 4))):
        entry: dict[bytes, bytes] = {}
        for name, values in ((b"move", st.sampled_from([b"claim", b"extend", b"\xff", b""])), (b"id", ids),
                             (b"ts", numbers), (b"actor", texts), (b"from", states), (b"to", states),
                             (b"attempts", numbers)):
            if draw(st.booleans()):
                entry[name] = draw(values)
        entries.append(entry or {b"junk": b"\xff"})
    return entries


@st.composite
def keyspace(draw: st.DrawFn) -> dict[str, Any]:
    """What to write: per key, its type ('none': absent) and content."""
    return {
        "registry": draw(st.one_of(
            st.sets(st.sampled_from([QUEUE, b"bad name", b"caf\xe9", "q\u202e".encode(), b"a{b}", b"x" * 300,
                                     b"emq"]), min_size=1),
            kinds.filter(lambda k: k != "set"))),
        "sets": {state.encode(): draw(st.one_of(st.dictionaries(ids, scores, max_size=4), kinds.filter(
            lambda k: k != "zset"))) for state in STATES},
        "jobs": draw(st.dictionaries(ids, st.one_of(job_fields(), kinds.filter(lambda k: k != "hash")), max_size=5)),
        "events": draw(st.one_of(events(), kinds.filter(lambda k: k != "stream"))),
        "others": {name: draw(st.one_of(st.just("none"), kinds)) for name in
                   (b"workers", b"counts", b"paused", b"failures", b"worker:w1", b"m:1", b"client_ids")},
        "paused": draw(st.one_of(st.none(), st.dictionaries(st.sampled_from([b"reason", b"actor", b"since_ms"]),
                                                             texts))),
    }


def _write_as(client: redis.Redis, key: bytes, kind: str) -> None:
    if kind == "string":
        client.set(key, b"\xff")
    elif kind == "list":
        client.rpush(key, b"\xff")
    elif kind == "set":
        client.sadd(key, b"\xff")
    elif kind == "hash":
        client.hset(key, b"\xff", b"\xfe")
    elif kind == "zset":
        client.zadd(key, {b"\xff": float("inf")})
    elif kind == "stream":
        client.xadd(key, {b"\xff": b"\xfe"})


def write(client: redis.Redis, space: dict[str, Any]) -> None:
    client.flushall()
    client.sadd(REGISTRY, b"calm")  # a queue of its own, whose live page must keep moving
    if isinstance(space["registry"], str):
        client.delete(REGISTRY)
        _write_as(client, REGISTRY, space["registry"])
    else:
        client.sadd(REGISTRY, *space["registry"])
    pre = prefix(QUEUE)
    for state, content in space["sets"].items():
        if isinstance(content, str):
            _write_as(client, pre + state, content)
        elif content:
            client.zadd(pre + state, content)
    for job_id, content in space["jobs"].items():
        if isinstance(content, str):
            _write_as(client, pre + b"job:" + job_id, content)
        else:
            client.hset(pre + b"job:" + job_id, mapping=content)
    if isinstance(space["events"], str):
        _write_as(client, pre + b"events", space["events"])
    for name, kind in space["others"].items():
        _write_as(client, pre + name, kind)
    if space["paused"] is not None and space["others"][b"paused"] == "none":
        client.hset(pre + b"paused", mapping=space["paused"] or {b"reason": b""})


def shown_ids(space: dict[str, Any]) -> list[str]:
    every = set(space["jobs"]) | {i for c in space["sets"].values() if isinstance(c, dict) for i in c}
    return sorted(as_str(i) for i in every)


def invisible_in(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in INVISIBLE.findall(text) if c not in "\n\t\r"})


READS = [["queues"], ["stats", "mail"], ["workers"], ["workers", "mail"], ["events", "mail"], ["check", "mail"],
         ["failures", "mail"], ["search", "mail", "--state", "failed", "--error", "x"],
         *[["jobs", "mail", state] for state in STATES]]


def cli_problems(url: str, job_ids: list[str]) -> list[str]:
    """An `emq` read that failed with an unexpected error (``emq: error:``) or printed an invisible character."""
    problems = []
    commands = [*READS, *[["show", "mail", j] for j in job_ids]]
    json_reads = [[*c, "--json"] for c in commands if c[0] in ("stats", "jobs", "show", "events")]
    for argv in [*commands, *json_reads]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = emq(["--url", url, *argv])
        if "emq: error:" in err.getvalue() or code not in (0, 1, 2, 3, 4, 7):  # 7: no such job
            problems.append(f"emq {' '.join(argv)}: exit {code}: {err.getvalue()[:300]}")
        elif invisible_in(out.getvalue() + err.getvalue()):
            problems.append(f"emq {' '.join(argv)} printed {invisible_in(out.getvalue() + err.getvalue())}")
    return problems


async def live_problems(mq: EchoMQ, url: str, space: dict[str, Any], job_ids: list[str]) -> list[str]:
    """Every live page rendered by a follower over the odd queue; then junk events must not stop the follower,
    which must still bring the calm queue's change to its page."""
    problems: list[str] = []
    follower = Follower(url, poll_interval_s=0.05, publish_interval_s=0.02, block_ms=50)
    follower.start()
    try:
        every = follower.subscribe(None)
        calm_page = JobPage("calm", "c1")
        calm = follower.subscribe(calm_page.queues)
        # Following begins: the calm queue read, and the odd one too when the registry names it (when it
        # does not, waiting for it would only run out the deadline).
        registered = not isinstance(space["registry"], str) and QUEUE in space["registry"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not ("calm" in follower._positions
                                                   and ("mail" in follower.followed() or not registered)):
            await asyncio.sleep(0.02)
        pages = [OverviewPage(), *[QueuePage(presenters.Window.from_query("mail", {"state": s})) for s in STATES],
                 *[JobPage("mail", j) for j in job_ids if _valid_id(j)]]
        for page in pages:
            try:
                messages = await page.full(follower) + await page.changed(follower, Update(jobs={"mail": None}))
            except Exception as error:  # what the consumer would log before closing the socket with 1011
                problems.append(f"{type(page).__name__} failed: {type(error).__name__}: {error}")
                continue
            bad = invisible_shown("".join(messages))
            if bad:
                problems.append(f"{type(page).__name__} pushed {bad}")
        if isinstance(space["events"], list):
            for entry in space["events"]:
                mq.redis.xadd(prefix(QUEUE) + b"events", entry)
        mq.enqueue("calm", "{}", job_id="c1")
        deadline = time.monotonic() + 10
        seen = False
        while time.monotonic() < deadline and not seen:
            try:
                update = await asyncio.wait_for(calm.next(), timeout=0.5)
            except TimeoutError:
                continue
            seen = update.job_changed("calm", "c1")
        if not seen:
            problems.append("the calm queue's job page got no update after the junk events")
        if not follower.running_now:
            problems.append("the follower stopped")
        every.close()
        calm.close()
    finally:
        await follower.stop()
    return problems


def _valid_id(job_id: str) -> bool:
    from queues import InvalidInput, validate_job_id

    try:
        validate_job_id(job_id)
    except InvalidInput:
        return False
    return True


@pytest.mark.timeout(900)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(space=keyspace())
def test_no_keyspace_makes_a_page_a_cli_read_or_a_live_push_fail(space: dict[str, Any], operator_client: Client,
                                                                 console_mq: EchoMQ, redis_url: str) -> None:
    raw: redis.Redis = console_mq.redis  # type: ignore[assignment]
    write(raw, space)
    queues = [as_str(q) for q in space["registry"]] if not isinstance(space["registry"], str) else ["mail"]
    job_ids = shown_ids(space)

    bad = server_errors(operator_client, console_urls(sorted(set(queues) | {"mail"}), [("mail", j) for j in job_ids]))
    assert not bad, "\n".join(f"{url}: {problem}" for url, problem in bad)
    job_pages = ["/job/?" + urlencode({"q": "mail", "id": j}) for j in job_ids[:3]]
    for url in ("/", "/queue/?q=mail", "/queue/?q=mail&state=done", *job_pages):
        shown = invisible_shown(operator_client.get(url).content.decode())
        assert not shown, f"{url} shows {shown} as they are"

    problems = cli_problems(redis_url, job_ids) + asyncio.run(live_problems(console_mq, redis_url, space, job_ids))
    assert not problems, "\n".join(problems)
