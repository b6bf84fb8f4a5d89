"""Bisecting a bad deploy in Chromium: two releases of a real ``emq worker`` over one queue, both failing one
tenant's jobs with a timeout, the second also failing every job of another tenant with a new exception. The
failures page, sorted by new since the last mark, names the new group first as new since the second release,
shows the tenant as over-represented in it, and retrying "this group, release 2 only" retries exactly those
jobs (the timeout group's failed jobs of both releases stay failed)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

import pytest
from playwright.sync_api import Page, expect

from queues import EchoMQ
from queues.failures import groups
from tests.support.browser import ROOT, Console

pytestmark = pytest.mark.browser
QUEUE = "browser-releases"
HANDLER = '''
import json
import os
import re


def handle(job):
    tenant = json.loads(job.payload)["tenant"]
    if tenant == "beta":
        raise TimeoutError("upstream took 30 s")
    # Release 2 reads a field that tenant acme's jobs do not carry.
    if os.environ["EMQ_RELEASE"] == "v2" and tenant == "acme":
        raise KeyError("plan")
'''


def start_release(url: str, release: str, folder: Path) -> subprocess.Popen[bytes]:
    (folder / "release_handlers.py").write_text(HANDLER)
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}", "EMQ_RELEASE": release}
    return subprocess.Popen([sys.executable, "-m", "queues", "--url", url, "worker", QUEUE, "--handler",
                             "release_handlers:handle", "--concurrency", "2"],
                            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_release(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(60)


def enqueue_batch(mq: EchoMQ, prefix: str) -> set[str]:
    """Twenty jobs, every fifth of tenant acme and every fifth of tenant beta; returns acme's ids."""
    acme = set()
    for i in range(20):
        tenant = "acme" if i % 5 == 0 else "beta" if i % 5 == 1 else f"tenant-{i}"
        mq.enqueue(QUEUE, json.dumps({"tenant": tenant, "order": {"n": i}}), job_id=f"{prefix}-{i}", max_attempts=1)
        if tenant == "acme":
            acme.add(f"{prefix}-{i}")
    return acme


def wait_finished(mq: EchoMQ, total: int) -> None:
    """Until the workers have finished ``total`` jobs (done or failed): they run apart from this process."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        counts = mq.stats(QUEUE).counts
        if counts["done"] + counts["failed"] >= total:
            return
        time.sleep(0.1)
    raise AssertionError(f"the workers did not finish {total} jobs: {mq.stats(QUEUE).counts}")


def test_the_failures_page_names_the_release_and_the_field_behind_a_new_group_and_retries_that_slice(
        operator_page: Page, console: Console) -> None:
    mq = EchoMQ.from_url(console.redis.url, actor="browser-test")
    folder = Path(tempfile.mkdtemp(prefix="emq-releases-"))
    first = start_release(console.redis.url, "v1", folder)
    try:
        enqueue_batch(mq, "one")
        wait_finished(mq, 20)
    finally:
        stop_release(first)
    second = start_release(console.redis.url, "v2", folder)
    try:
        broken = enqueue_batch(mq, "two")
        wait_finished(mq, 40)
    finally:
        stop_release(second)
    by_error = {g.sample_error.split(":")[0]: g for g in mq.run(groups(QUEUE)).groups}
    group, timeouts = by_error["KeyError"], by_error["TimeoutError"]
    assert group.count == len(broken) == 4 and group.first_ms is not None and timeouts.count == 8

    page = operator_page
    page.goto(console.url + f"failures/?q={QUEUE}&sort=new")
    shown = page.locator(".failure-group").first
    expect(shown).to_have_attribute("data-group", group.id)  # first, though the timeout group is larger
    expect(shown.locator(".new-since")).to_have_text("new since release v2")
    expect(page.locator(f'.failure-group[data-group="{timeouts.id}"] .new-since')).to_have_count(0)
    assert mq.server_time_ms(QUEUE) <= group.first_ms + 60_000  # named within 60 s of the first such failure
    share = shown.locator(".field-share", has_text='tenant="acme"')
    # All jobs' share is read from a bounded sample of each state, weighed by the state's size: about the 8 in 40
    # acme jobs of both releases, never near the group's own.
    expect(share).to_contain_text(re.compile(r'100 % have tenant="acme" against \d+ % of all jobs'))
    assert float(share.get_attribute("data-share") or 0) >= 0.9
    assert 0 < float(share.get_attribute("data-all-share") or 1) <= 0.25
    expect(shown.locator(".group-hosts")).to_be_visible()

    shown.locator("summary", has_text="Act on a slice").click()
    form = shown.locator(".group-slice-form")
    form.locator("select[name=release]").select_option("v2")
    form.locator("button[value=retry]").click()

    dialog = page.locator("dialog.confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".confirm-question")).to_contain_text("Retry the 4 jobs matching now: failed jobs whose "
                                                                f"failure group is {group.id} and newest attempt's "
                                                                "release is 'v2'")
    assert mq.stats(QUEUE).counts["failed"] == 12  # nothing moved before the confirmation
    dialog.locator("button.danger").click()
    expect(page.locator(".run-progress .tally")).to_contain_text("4 moved, 0 skipped", timeout=15_000)
    pending = {m.decode() for m in cast(list[bytes], mq.redis.zrange(f"emq:{{{QUEUE}}}:pending", 0, -1))}
    assert pending == broken
    assert mq.stats(QUEUE).counts == {"pending": 4, "active": 0, "done": 28, "failed": 8}
    assert mq.run(groups(QUEUE)).groups[0].id == timeouts.id
    mq.close()
