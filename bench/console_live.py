"""The live console under sustained moves: its CPU, messages per browser page, move-to-screen latency.

Starts a private redis-server, one daphne serving the console and real
Chromium with two open pages (the overview, and the queue page of the
busiest queue). A load process makes ``--rate`` moves per second
(enqueue, claim, complete over four queues, pipelined every 100 ms). Every
half second this process enqueues one job into a ``probe`` queue and notes
the time; the overview page notes when its probe count shows it. Both run
on this machine, so the two clocks are the same clock.

The baseline is the same run with no load (the probes only), measured first.

    python -m bench.console_live                     # 2,000 moves/s for 30 s
    python -m bench.console_live --rate 5000 --seconds 20
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

from dashboard.presenters import dom_id
from queues import EchoMQ, moves
from tests.support.redis_servers import RedisServer, free_port

ROOT = Path(__file__).resolve().parents[1]
LOAD_QUEUES = [f"load-{n}" for n in range(4)]
PROBE = "probe"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WATCH = """
window.__bench = {messages: 0, seen: [], last: null};
document.addEventListener("htmx:wsAfterMessage", () => {
  window.__bench.messages += 1;
  const cell = document.querySelector("#%s td.pending");
  if (cell && cell.textContent !== window.__bench.last) {
    window.__bench.last = cell.textContent;
    window.__bench.seen.push([Date.now(), Number(cell.textContent)]);
  }
});
""" % dom_id("q", PROBE)


def _load(url: str, rate: int, stop: Any, out: Connection) -> None:
    mq = EchoMQ.from_url(url, actor="bench-load")
    tick = 0.1
    per_queue = max(1, round(rate * tick / 3 / len(LOAD_QUEUES)))
    made = 0
    started = next_tick = time.monotonic()
    while not stop.is_set():
        for queue in LOAD_QUEUES:
            mq.enqueue_many(queue, ["{}"] * per_queue)
            claimed = mq.claim(queue, lease_ms=60_000, count=per_queue)
            mq.run_many([moves.complete(queue, job.id, job.token, actor=mq.actor) for job in claimed])
            made += per_queue + 2 * len(claimed)
        next_tick += tick
        time.sleep(max(0.0, next_tick - time.monotonic()))
    out.send(made / (time.monotonic() - started))


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(pages: list[Page], daphne: subprocess.Popen[bytes], mq: EchoMQ, seconds: float) -> dict[str, Any]:
    for page in pages:
        page.evaluate("window.__bench.messages = 0")
    probes: list[tuple[float, int]] = []
    count = mq.stats(PROBE).counts["pending"]
    cpu_before, started = _cpu_seconds(daphne.pid), time.monotonic()
    while time.monotonic() - started < seconds:
        mq.enqueue(PROBE, "{}")
        count += 1
        probes.append((time.time() * 1000, count))
        pages[0].wait_for_timeout(500)
    pages[0].wait_for_timeout(1500)
    elapsed = time.monotonic() - started
    cpu = (_cpu_seconds(daphne.pid) - cpu_before) / elapsed * 100
    messages = [page.evaluate("window.__bench.messages") / (elapsed + 1.5) for page in pages]
    seen: list[list[float]] = pages[0].evaluate("window.__bench.seen")
    latencies = []
    for sent_ms, expected in probes:
        shown = next((t for t, value in seen if value >= expected and t >= sent_ms - 5), None)
        if shown is not None:
            latencies.append(shown - sent_ms)
    latencies.sort()
    return {"cpu": cpu, "messages": messages, "probes": len(probes), "shown": len(latencies),
            "p50": statistics.median(latencies) if latencies else float("nan"),
            "p95": latencies[max(int(len(latencies) * 0.95) - 1, 0)] if latencies else float("nan")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=2000, help="moves per second")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--baseline-seconds", type=float, default=15.0)
    args = parser.parse_args()

    redis = RedisServer().start()
    workdir = Path(tempfile.mkdtemp(prefix="emq-bench-live-"))
    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings", "SECRET_KEY": "bench-only-" + "x" * 40,
           "EMQ_REDIS_URL": redis.url, "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}", "PYTHONPATH": str(ROOT)}
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=ROOT, check=True)
    subprocess.run([*manage, "shell", "-c", "from dashboard.roles import user_create; "
                    "user_create(username='bench', password='bench-password', role='viewers')"],
                   env=env, cwd=ROOT, check=True)
    mq = EchoMQ.from_url(redis.url, actor="bench-probe")
    for queue in [*LOAD_QUEUES, PROBE]:
        mq.enqueue(queue, "{}")
    daphne = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                               "dashboard.asgi:application"], env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/"
    stop = multiprocessing.Event()
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(base + "login/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            context = browser.new_context()
            context.add_init_script(WATCH)
            login = context.new_page()
            login.goto(base + "login/")
            login.fill("#id_username", "bench")
            login.fill("#id_password", "bench-password")
            login.click("button[type=submit]")
            login.wait_for_url(base)
            login.close()
            overview, queue_page = context.new_page(), context.new_page()
            overview.goto(base)
            queue_page.goto(base + f"queue/?q={LOAD_QUEUES[0]}&state=done")
            overview.wait_for_timeout(2000)

            idle = _measure([overview, queue_page], daphne, mq, args.baseline_seconds)
            receiver, sender = multiprocessing.Pipe(duplex=False)
            load = multiprocessing.Process(target=_load, args=(redis.url, args.rate, stop, sender))
            load.start()
            overview.wait_for_timeout(2000)
            busy = _measure([overview, queue_page], daphne, mq, args.seconds)
            stop.set()
            achieved = receiver.recv()
            load.join()
            browser.close()
        print(f"{'':34} {'idle (baseline)':>16} {'under load':>14}")
        print(f"{'moves/s made by the load process':34} {0:>16} {achieved:>14,.0f}")
        print(f"{'console (daphne) CPU, % of a core':34} {idle['cpu']:>16.1f} {busy['cpu']:>14.1f}")
        print(f"{'messages/s, overview page':34} {idle['messages'][0]:>16.2f} {busy['messages'][0]:>14.2f}")
        print(f"{'messages/s, queue page':34} {idle['messages'][1]:>16.2f} {busy['messages'][1]:>14.2f}")
        print(f"{'move-to-screen p50, ms':34} {idle['p50']:>16.0f} {busy['p50']:>14.0f}")
        print(f"{'move-to-screen p95, ms':34} {idle['p95']:>16.0f} {busy['p95']:>14.0f}")
        print(f"{'probes shown / sent':34} {idle['shown']:>9} / {idle['probes']:<4} {busy['shown']:>7} / {busy['probes']}")
    finally:
        stop.set()
        daphne.terminate()
        daphne.wait(10)
        mq.close()
        redis.cleanup()


if __name__ == "__main__":
    main()
