"""A real HTTP receiver on loopback that verifies each webhook's signature as a receiver in production would."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    signed: bool  # the signature matched the timestamp and body under the secret
    at: float = field(default_factory=time.monotonic)  # when it arrived (time.monotonic)

    @property
    def data(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    secret: str
    # The statuses to answer, in turn; the last one repeats.
    statuses: list[int] = field(default_factory=lambda: [200])
    received: list[Received] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    url: str = ""

    def verify(self, headers: dict[str, str], body: bytes) -> bool:
        timestamp, sent = headers.get("X-Emq-Timestamp", ""), headers.get("X-Emq-Signature", "")
        expected = "v1=" + hmac.new(self.secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        return bool(timestamp) and hmac.compare_digest(expected, sent)

    def answer(self) -> int:
        index = min(len(self.received) - 1, len(self.statuses) - 1)
        return self.statuses[index]


@contextmanager
def webhook_receiver(secret: str, statuses: list[int] | None = None) -> Iterator[Receiver]:
    receiver = Receiver(secret, statuses or [200])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {k.title(): v for k, v in self.headers.items()}
            receiver.received.append(Received(headers, body, receiver.verify(headers, body)))
            status = receiver.answer()
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            receiver.arrived.set()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
