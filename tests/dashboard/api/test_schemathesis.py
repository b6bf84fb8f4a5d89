"""Schemathesis against a real daphne: no generated request gets a 500, and every answer matches the schema.

The console runs as in production (daphne, its own SQLite file, a real
redis-server) with a queue in every state; requests come as an operator's API
token, so the moves run too. A handful of examples per operation keeps the run
to a minute or two on a loaded machine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from queues import EchoMQ, QueueKeys
from tests.support.daphne import console_env, manage, start_daphne, stop_daphne
from tests.support.jobs import done_jobs, failed_jobs
from tests.support.redis_servers import RedisServer

MAX_EXAMPLES = os.environ.get("EMQ_SCHEMATHESIS_EXAMPLES", "30")
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


@pytest.fixture
def live_console(redis_server: RedisServer) -> Iterator[tuple[str, str, EchoMQ]]:
    redis_server.client().flushall()
    mq = EchoMQ.from_url(redis_server.url, actor="test")
    failed_jobs(mq, "mail", 3)
    done_jobs(mq, "mail", 3)
    mq.enqueue("mail", "later", delay_ms=3_600_000)
    mq.enqueue("mail", b"\xff\xfe", job_id="binary")
    [lapsed] = mq.claim("mail", lease_ms=60_000)
    mq.redis.zadd(QueueKeys("mail").active, {lapsed.id: 1})
    mq.enqueue("thumbs", "x")
    workdir = Path(tempfile.mkdtemp(prefix="emq-schemathesis-"))
    env = console_env(redis_server.url, workdir, EMQ_SWEEPER_INTERVAL_S="0")
    manage(env, "migrate", "-v0")
    token = manage(env, "shell", "-c", "from dashboard.roles import user_create; "
                   "from dashboard.orders.tokens import api_token_create; "
                   "print(api_token_create(user=user_create(username='otto', password='otto-password', "
                   "role='operators'), name='schemathesis'))").strip().splitlines()[-1]
    url, daphne = start_daphne(env, workdir, "daphne")
    try:
        yield url, token, mq
    finally:
        stop_daphne(daphne)
        mq.close()


def test_no_generated_request_gets_a_500_and_every_answer_matches_the_schema(
        live_console: tuple[str, str, EchoMQ], tmp_path: Path) -> None:
    url, token, _ = live_console

    done = subprocess.run(
        [sys.executable, "-m", "schemathesis.cli", "run", f"{url}api/schema", "--url", url.rstrip("/"),
         "--checks", CHECKS, "--max-examples", MAX_EXAMPLES, "--workers", "2", "--seed", "1",
         "--phases", "examples,fuzzing", "--generation-database", "none", "--no-color",
         "--request-timeout", "30", "--suppress-health-check", "too_slow",
         "-H", f"Authorization: Bearer {token}", "--report", "junit", "--report-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=900, cwd=tmp_path)

    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]
    # Every operation ran, and every generated case passed every check (not a quick pass on nothing).
    schema = urllib.request.Request(f"{url}api/schema", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(schema, timeout=30) as answer:
        operations = sum(len(methods) for methods in json.load(answer)["paths"].values())
    assert operations >= 30 and f"Tested: {operations}" in done.stdout, done.stdout[-3000:]
    tally = re.search(r"(\d+) generated, (\d+) passed", done.stdout)
    assert tally and int(tally.group(1)) >= 100 and tally.group(1) == tally.group(2), done.stdout[-3000:]
