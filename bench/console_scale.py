"""The console's cost on Redis at scale: 10 to 10,000 queues and a queue of 10^6 jobs, 0 to 10 open tabs.

One private redis-server holds the data. For each keyspace, each side (this
tree, and the code before the change: ``--baseline DIR``, a checkout of an
older commit, e.g. ``git worktree add /tmp/emq-baseline b3d6bf7``) runs its own
daphne process on the same data, one after the other, its lease sweeper on as
in production (every 5 s). Then, with 0, 1 and 10 real Chromium tabs open on
the overview and on a queue page, over ``--seconds``:

* Redis commands/s and Redis CPU (% of a core), from ``INFO commandstats`` and
  ``INFO cpu`` deltas: nothing but the console talks to this Redis meanwhile,
  so all of it is the console's (this script's own INFO calls are left out);
* the console's own CPU (the daphne process);
* the largest WebSocket message any tab received (from the page's load on);
* with no tab open: overview and queue page server time (median of 5 GETs on
  loopback) and HTML bytes.

The keyspaces: N queues of 3 pending jobs each, and one queue of ``--jobs``
pending jobs, all written server-side by bench/fill.lua in batches.

    python -m bench.console_scale --baseline /tmp/emq-baseline
    python -m bench.console_scale --queues 10,1000 --tabs 0,1 --seconds 5 --jobs 0
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

from tests.support.redis_servers import RedisServer, free_port

ROOT = Path(__file__).resolve().parents[1]
FILL = (Path(__file__).with_name("fill.lua")).read_text()
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
PAGE_LOAD_TIMEOUT_MS = 30_000
BIG = "bench-big"


@dataclass
class Figures:
    side: str
    keyspace: str
    tabs: str
    commands_per_s: float = 0.0
    evalsha_per_s: float = 0.0
    redis_cpu: float = 0.0
    console_cpu: float = 0.0
    largest_ws: int = 0
    loaded: str = ""
    top: dict[str, float] = field(default_factory=dict)


@dataclass
class PageFigures:
    side: str
    keyspace: str
    page: str
    ms: float
    bytes: int
    status: str


def _fill(client: Any, queue: str, count: int, batch: int = 10_000) -> None:
    prefix = f"emq:{{{queue}}}:"
    keys = [prefix + part for part in ("pending", "active", "done", "failed", "events")] + [prefix]
    for first in range(0, count, batch):
        client.eval(FILL, len(keys), *keys, first, min(batch, count - first), '{"n": 1}', "bench-fill")
    client.sadd("emq:queues", queue)


def seed(client: Any, queues: int, jobs: int) -> str:
    client.flushall()
    if jobs:
        _fill(client, BIG, jobs)
        return f"1 queue x {jobs:,} jobs"
    pipe = client.pipeline(transaction=False)
    for n in range(queues):
        name = f"tenant-{n:05d}"
        prefix = f"emq:{{{name}}}:"
        keys = [prefix + part for part in ("pending", "active", "done", "failed", "events")] + [prefix]
        pipe.eval(FILL, len(keys), *keys, 0, 3, '{"n": 1}', "bench-fill")
        pipe.sadd("emq:queues", name)
        if n % 1000 == 999:
            pipe.execute()
    pipe.execute()
    return f"{queues:,} queues x 3 jobs"


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _redis_counters(client: Any) -> tuple[dict[str, int], float]:
    stats = client.info("commandstats")
    calls = {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}
    cpu = client.info("cpu")
    return calls, float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])


class Console:
    """One side's daphne on the private Redis, with its own SQLite database and a viewer to log in as."""

    def __init__(self, side: str, tree: Path, redis_url: str) -> None:
        self.side, self.tree = side, tree
        self.workdir = Path(tempfile.mkdtemp(prefix=f"emq-bench-scale-{side}-"))
        self.env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings",
                    "SECRET_KEY": "bench-only-" + "x" * 40, "EMQ_REDIS_URL": redis_url,
                    "DATABASE_URL": f"sqlite:///{self.workdir / 'db.sqlite3'}", "PYTHONPATH": str(tree)}
        manage = [sys.executable, str(tree / "manage.py")]
        subprocess.run([*manage, "migrate", "-v0"], env=self.env, cwd=tree, check=True)
        subprocess.run([*manage, "shell", "-c", "from dashboard.roles import user_create; "
                        "user_create(username='bench', password='bench-password', role='viewers')"],
                       env=self.env, cwd=tree, check=True)
        self.process: subprocess.Popen[bytes] | None = None
        self.base = ""

    def start(self) -> None:
        port = free_port()
        self.base = f"http://127.0.0.1:{port}/"
        self.process = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                         "dashboard.asgi:application"], env=self.env, cwd=self.tree,
                                        stdout=subprocess.DEVNULL, stderr=open(self.workdir / "daphne.log", "ab"))
        for _ in range(300):
            try:
                urllib.request.urlopen(self.base + "login/", timeout=1)
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"the {self.side} console did not start; see {self.workdir / 'daphne.log'}")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def log_in(self, browser: Browser) -> BrowserContext:
        context = browser.new_context()
        page = context.new_page()
        page.goto(self.base + "login/")
        page.fill("#id_username", "bench")
        page.fill("#id_password", "bench-password")
        page.click("button[type=submit]")
        page.wait_for_url(self.base)
        page.close()
        return context


def _get(url: str, cookie: str) -> tuple[float, int, str]:
    request = urllib.request.Request(url, headers={"Cookie": cookie})
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            body = response.read()
            status = str(response.status)
    except urllib.error.HTTPError as error:
        body, status = error.read(), str(error.code)
    except OSError as error:
        return (time.perf_counter() - started) * 1000, 0, f"failed: {error}"
    return (time.perf_counter() - started) * 1000, len(body), status


def page_times(console: Console, context: BrowserContext, keyspace: str, queue: str,
               repeat: int) -> list[PageFigures]:
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in context.cookies())
    out = []
    for name, path in (("overview", ""), ("queue page", f"queue/?q={queue}&state=pending")):
        samples = [_get(console.base + path, cookie) for _ in range(repeat)]
        out.append(PageFigures(console.side, keyspace, name, statistics.median(s[0] for s in samples),
                               max(s[1] for s in samples), samples[-1][2]))
    return out


def _open_tabs(context: BrowserContext, url: str, count: int, largest: list[int]) -> tuple[list[Page], str]:
    def watch(page: Page) -> None:
        def on_socket(ws: Any) -> None:
            ws.on("framereceived", lambda payload: largest.__setitem__(
                0, max(largest[0], len(payload.encode() if isinstance(payload, str) else payload))))
        page.on("websocket", on_socket)

    pages, failures = [], 0
    for _ in range(count):
        page = context.new_page()
        watch(page)
        try:
            page.goto(url, timeout=PAGE_LOAD_TIMEOUT_MS)
        except Exception:  # a page that does not load in time is a figure, not the end of the run
            failures += 1
        pages.append(page)
    loaded = f"{count - failures}/{count}" if count else ""
    return pages, loaded


def measure(console: Console, redis: Any, context: BrowserContext, keyspace: str, tabs: int, where: str,
            queue: str, seconds: float, settle_s: float) -> Figures:
    assert console.process is not None
    largest = [0]
    url = console.base + ("" if where == "overview" else f"queue/?q={queue}&state=pending")
    pages, loaded = _open_tabs(context, url, tabs, largest)
    time.sleep(settle_s)
    calls_before, redis_cpu_before = _redis_counters(redis)
    console_cpu_before, started = _cpu_seconds(console.process.pid), time.monotonic()
    time.sleep(seconds)
    calls_after, redis_cpu_after = _redis_counters(redis)
    elapsed = time.monotonic() - started
    console_cpu = (_cpu_seconds(console.process.pid) - console_cpu_before) / elapsed * 100
    for page in pages:
        page.close()
    delta = {name: calls_after.get(name, 0) - calls_before.get(name, 0) for name in calls_after}
    delta.pop("info", None)
    total = sum(delta.values())
    top = dict(sorted(((n, round(c / elapsed, 1)) for n, c in delta.items() if c), key=lambda i: -i[1])[:4])
    return Figures(console.side, keyspace, f"{tabs} {where}" if tabs else "none", total / elapsed,
                   delta.get("evalsha", 0) / elapsed, (redis_cpu_after - redis_cpu_before) / elapsed * 100,
                   console_cpu, largest[0], loaded, top)


def _table(figures: list[Figures], pages: list[PageFigures]) -> str:
    lines = ["| keyspace | tabs | side | Redis commands/s | of which EVALSHA/s | Redis CPU % | console CPU % "
             "| largest WS message | tabs loaded |", "|---|---|---|---|---|---|---|---|---|"]
    for f in figures:
        lines.append(f"| {f.keyspace} | {f.tabs} | {f.side} | {f.commands_per_s:,.0f} | {f.evalsha_per_s:,.0f} "
                     f"| {f.redis_cpu:.1f} | {f.console_cpu:.1f} | {f.largest_ws:,} B | {f.loaded or '–'} |")
    lines += ["", "| keyspace | page | side | server time (median of GETs) | HTML bytes | status |",
              "|---|---|---|---|---|---|"]
    for p in pages:
        lines.append(f"| {p.keyspace} | {p.page} | {p.side} | {p.ms:,.0f} ms | {p.bytes:,} | {p.status} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a checkout of the code before (omit: this tree only)")
    parser.add_argument("--queues", default="10,1000,10000", help="comma separated queue counts")
    parser.add_argument("--jobs", type=int, default=1_000_000, help="jobs in the one big queue (0: skip it)")
    parser.add_argument("--tabs", default="0,1,10", help="comma separated numbers of open tabs")
    parser.add_argument("--seconds", type=float, default=10.0, help="each measurement window")
    parser.add_argument("--settle", type=float, default=3.0, help="wait after the tabs opened")
    parser.add_argument("--repeat", type=int, default=5, help="GETs per page for the server time")
    parser.add_argument("--skip-baseline-tabs-over", type=int, default=10_000,
                        help="at this many queues and more, the baseline gets at most 1 tab (its overview "
                             "does not load there; 10 would only load the shared machine)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    redis_server = RedisServer().start()
    redis = redis_server.client()
    sides = [Console("after", ROOT, redis_server.url)]
    if args.baseline:
        sides.insert(0, Console("before", args.baseline.resolve(), redis_server.url))
    keyspaces: list[tuple[int, int]] = [(int(n), 0) for n in args.queues.split(",") if n]
    if args.jobs:
        keyspaces.append((1, args.jobs))
    tab_counts = [int(t) for t in args.tabs.split(",") if t]
    figures: list[Figures] = []
    pages: list[PageFigures] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            for queues, jobs in keyspaces:
                filled = time.monotonic()
                keyspace = seed(redis, queues, jobs)
                queue = BIG if jobs else "tenant-00000"
                print(f"# {keyspace}: filled in {time.monotonic() - filled:.1f} s, "
                      f"{redis.info('memory')['used_memory'] / 2**20:,.0f} MiB", flush=True)
                for console in sides:
                    console.start()
                    try:
                        context = console.log_in(browser)
                        measured = page_times(console, context, keyspace, queue, args.repeat)
                        for figure in measured:
                            print(json.dumps(asdict(figure)), flush=True)
                        pages += measured
                        for tabs in tab_counts:
                            for where in (["overview", "queue page"] if tabs else ["overview"]):
                                if console.side == "before" and queues >= args.skip_baseline_tabs_over and tabs > 1:
                                    continue
                                result = measure(console, redis, context, keyspace, tabs, where, queue,
                                                 args.seconds, args.settle)
                                figures.append(result)
                                print(json.dumps(asdict(result)), flush=True)
                        context.close()
                    finally:
                        console.stop()
            browser.close()
    finally:
        for console in sides:
            console.stop()
        redis_server.cleanup()
    print(_table(figures, pages))
    if args.json:
        args.json.write_text(json.dumps({"figures": [asdict(f) for f in figures],
                                         "pages": [asdict(p) for p in pages]}, indent=1))


if __name__ == "__main__":
    main()
