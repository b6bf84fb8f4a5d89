"""``manage.py demo``: queues with work flowing through every state, and the console serving them.

Seeds four queues, then runs (in a background thread) workers that complete
most jobs and fail some, a producer that keeps jobs coming (some delayed),
and a "crashing" worker that claims jobs and never reports, so leases lapse
and the other workers' heartbeat recovers them. Exchange orders flow too: a
producer places orders through the gateway's one script and a worker fills
them (``exchange.demo:fill_order``). A queue ``legacy`` holds a few jobs as
another runtime might have written them, so the console's warnings show.
Serves the console with daphne in the foreground; once it listens, prints its URL
and the demo logins last, and again every few minutes, so that they stay easy to find.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.asgi_limits import is_loopback
from dashboard.roles import OPERATORS, VIEWERS, user_create
from exchange import InvalidOrder, place_order
from queues import AsyncEchoMQ, ClaimedJob, EchoMQ, EmqError
from queues.foreign import write_foreign_job
from queues.worker import Worker

LOGINS = (("operator", "operator-demo", OPERATORS), ("viewer", "viewer-demo", VIEWERS))
BANNER_EVERY_S = 300.0
DEMO_GRACE_MS = 1_000


@dataclass(frozen=True)
class DemoQueue:
    name: str
    concurrency: int
    lease_ms: int
    work_s: tuple[float, float]
    fail_rate: float
    error: str
    per_tick: int


QUEUES = (
    DemoQueue("emails", 4, 10_000, (0.2, 1.5), 0.05, "smtp: 451 4.7.1 try again later", 3),
    DemoQueue("thumbnails", 3, 15_000, (0.5, 3.0), 0.15, "PIL.UnidentifiedImageError: cannot identify image", 2),
    DemoQueue("reports", 1, 60_000, (5.0, 20.0), 0.10, "TimeoutError: warehouse query took too long", 1),
    DemoQueue("webhooks", 2, 8_000, (0.3, 2.0), 0.10, "HTTP 502 from https://hooks.example.com/", 2),
)


# Jobs as another runtime wrote them: (id, state, attempts, payload); the console shows each with a warning.
FOREIGN_JOBS: tuple[tuple[str, str, str, bytes | str], ...] = (
    ("core-fields-only", "pending", "0", '{"written_by": "another runtime", "fields": 3}'),
    ("attempts-not-a-number", "pending", "two", '{"note": "attempts is not a number"}'),
    ("unknown-state", "limbo", "1", '{"note": "a state EchoMQ does not know"}'),
    ("binary-payload", "pending", "0", bytes(range(256))[::7]),
    ("xss-payload", "pending", "0", "<img src=x onerror=alert(1)>"),
)
SYMBOLS = ("ACME", "BTC-USD", "GLOBEX", "INITECH")


def _order(client_order_id: str) -> dict[str, object]:
    limit = random.random() < 0.7
    return {"client_order_id": client_order_id, "side": random.choice(["buy", "sell"]),
            "symbol": random.choice(SYMBOLS), "type": "limit" if limit else "market",
            "quantity": random.randint(1, 50), "time_in_force": "GTC" if limit else "IOC",
            **({"price": f"{random.uniform(5, 200):.2f}"} if limit else {})}


def _payload(queue: str, n: int) -> str | bytes:
    if queue == "thumbnails" and n % 17 == 0:
        return bytes(random.randrange(256) for _ in range(64))
    if queue == "reports" and n % 5 == 0:
        return json.dumps({"report": "monthly", "rows": [{"sku": f"SKU-{i}", "qty": i} for i in range(600)]})
    if queue == "webhooks" and n % 11 == 0:
        return '<script>alert("payloads are shown inert")</script>'
    return json.dumps({"queue": queue, "n": n, "to": f"user{n}@example.com", "attempt_note": "demo"})


def _handler(queue: DemoQueue) -> Any:
    async def handle(job: ClaimedJob) -> None:
        await asyncio.sleep(random.uniform(*queue.work_s))
        if random.random() < queue.fail_rate:
            raise RuntimeError(queue.error)

    return handle


async def _nap(halt: asyncio.Event, seconds: float) -> None:
    """Sleeps, or less when the demo stops: a Ctrl-C must not wait out a pretend worker's nap."""
    try:
        await asyncio.wait_for(halt.wait(), seconds)
    except TimeoutError:
        pass


def _safe(url: str) -> str:
    """The URL without its password, as it may be printed."""
    parts = urlsplit(url)
    if parts.password:
        host = parts.hostname or ""
        netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


class Command(BaseCommand):
    help = "Seed demo queues, run demo workers, and serve the console with daphne."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addr", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-serve", action="store_true", help="seed and run the workers, but do not serve")
        parser.add_argument("--force", action="store_true",
                            help="run on a Redis that already holds keys (its demo workers move jobs in it)")
        parser.add_argument("--access-log", action="store_true",
                            help="print daphne's access log (a line per request; off so the logins stay in view)")
        parser.add_argument("--banner-every", type=float, default=BANNER_EVERY_S, metavar="SECONDS",
                            help="print the URL and the logins again this often (default every five minutes)")

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.DEBUG and not options["no_serve"] and not is_loopback((options["addr"], options["port"])):
            # The console would refuse every connection anyway (DEBUG answers loopback only): say so at once.
            raise CommandError(f"DEBUG shows settings and tracebacks: it is for 127.0.0.1 only. To serve the demo "
                               f"on {options['addr']}, run it with DEBUG=0 (DEBUG=0 ./dev demo --addr ...)")
        url = settings.EMQ_REDIS_URL
        mq = EchoMQ.from_url(url, actor="demo-seed")
        try:
            held = mq.key_count()
        except EmqError as error:
            raise CommandError(f"the demo cannot reach the Redis at {_safe(url)}: {error}") from None
        if held and not options["force"]:
            raise CommandError(
                f"refused: the Redis at {_safe(url)} already holds {held} keys. The demo writes demo queues there "
                "and runs workers that complete, fail and recover jobs in queues named emails, reports, orders and "
                "more, so it only starts on an empty Redis. Run ./dev demo without --redis-url (and without "
                "EMQ_REDIS_URL) for a private redis-server of its own, or add --force to use this one anyway.")
        # Here rather than as a step of ./dev before: one Django start less, and a refused Redis costs none.
        call_command("migrate", verbosity=0, interactive=False)
        for username, password, role in LOGINS:
            user_create(username=username, password=password, role=role)
        self._seed(mq)
        stop = threading.Event()
        thread = threading.Thread(target=lambda: asyncio.run(self._work(url, stop)), name="demo-workers", daemon=True)
        thread.start()

        try:
            if options["no_serve"]:
                self._banner(url, options)
                thread.join()
            else:
                from daphne.cli import CommandLineInterface

                threading.Thread(target=self._announce, args=(url, options, stop), name="demo-banner",
                                 daemon=True).start()
                # The access log is off unless asked for: a live page makes a dozen lines a second,
                # which would push the URL and the logins out of the terminal at once.
                access_log = ["--access-log", "-"] if options["access_log"] else ["--access-log", os.devnull]
                CommandLineInterface().run(["-b", options["addr"], "-p", str(options["port"]), *access_log,
                                            "--proxy-headers", "dashboard.asgi:application"])
        except KeyboardInterrupt:
            pass
        finally:
            stop.set()
            thread.join(timeout=15)

    def _banner(self, url: str, options: dict[str, Any]) -> None:
        address = f"http://{options['addr']}:{options['port']}/"
        self.stdout.write(self.style.SUCCESS(f"EchoMQ console: {address}"))
        for username, password, role in LOGINS:
            self.stdout.write(f"  log in as {username} / {password}  ({role})")
        self.stdout.write(f"  Redis: {_safe(url)}   (Ctrl-C stops the console, the demo workers and a private Redis)")
        self.stdout.flush()

    def _announce(self, url: str, options: dict[str, Any], stop: threading.Event) -> None:
        """The banner once daphne listens (after its own start-up lines), then again every few minutes."""
        while not stop.is_set():
            try:
                socket.create_connection((options["addr"], options["port"]), timeout=1).close()
                break
            except OSError:
                stop.wait(0.1)
        while not stop.is_set():
            self._banner(url, options)
            stop.wait(options["banner_every"])

    def _seed(self, mq: EchoMQ) -> None:
        for queue in QUEUES:
            backlog = {"emails": 200, "thumbnails": 120, "reports": 12, "webhooks": 60}[queue.name]
            mq.enqueue_many(queue.name, [_payload(queue.name, n) for n in range(backlog)])
            mq.enqueue_many(queue.name, [_payload(queue.name, n) for n in range(5)], delay_ms=90_000)
        mq.enqueue("reports", _payload("reports", 1), delay_ms=15 * 60_000)
        for job_id, state, attempts, payload in FOREIGN_JOBS:
            write_foreign_job(mq, "legacy", job_id, state=state, attempts=attempts, payload=payload)
        run = f"demo-{int(time.time())}"
        for n in range(12):
            place_order(mq, _order(f"{run}-seed-{n}"))

    async def _work(self, url: str, stop: threading.Event) -> None:
        halt = asyncio.Event()
        # A second of grace, then a running job is handed back: Ctrl-C ends the demo at once, not after
        # a report's twenty seconds of pretend work.
        workers = [Worker(queue=q.name, handler=_handler(q), concurrency=q.concurrency, lease_ms=q.lease_ms,
                          grace_ms=DEMO_GRACE_MS, url=url, actor=f"demo-worker-{q.name}") for q in QUEUES]
        workers.append(Worker(queue="orders", handler="exchange.demo:fill_order", concurrency=2, lease_ms=10_000,
                              grace_ms=DEMO_GRACE_MS, url=url, actor="demo-worker-orders"))
        tasks: list[asyncio.Task[Any]] = [asyncio.create_task(w.serve(halt)) for w in workers]
        tasks += [asyncio.create_task(self._produce(url, halt)), asyncio.create_task(self._crash(url, halt)),
                  asyncio.create_task(self._place_orders(url, halt))]
        while not stop.is_set():
            await asyncio.sleep(0.2)
        halt.set()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _produce(self, url: str, halt: asyncio.Event) -> None:
        mq = AsyncEchoMQ.from_url(url, actor="demo-producer")
        n = 1000
        while not halt.is_set():
            for queue in QUEUES:
                for _ in range(random.randint(0, queue.per_tick)):
                    n += 1
                    delay = random.choice([0, 0, 0, 0, 5_000, 30_000, 120_000])
                    try:
                        await mq.enqueue(queue.name, _payload(queue.name, n), delay_ms=delay)
                    except EmqError:
                        await _nap(halt, 1)
            await _nap(halt, 1.0)

    async def _crash(self, url: str, halt: asyncio.Event) -> None:
        """A worker that claims a webhook now and then and dies with it: its lease lapses."""
        mq = AsyncEchoMQ.from_url(url, actor="demo-crashing-worker")
        while not halt.is_set():
            try:
                await mq.claim("webhooks", lease_ms=12_000)
            except EmqError:
                pass
            await _nap(halt, random.uniform(4, 9))

    async def _place_orders(self, url: str, halt: asyncio.Event) -> None:
        """A trader placing an order every second or two through the gateway's one script."""
        mq = await asyncio.to_thread(EchoMQ.from_url, url, actor="demo-trader")
        run = f"demo-{int(time.time())}"
        n = 0
        while not halt.is_set():
            n += 1
            try:
                await asyncio.to_thread(place_order, mq, _order(f"{run}-{n}"))
            except (EmqError, InvalidOrder):
                await _nap(halt, 1)
            await _nap(halt, random.uniform(0.5, 2.0))
