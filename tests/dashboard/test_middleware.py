"""The guards in front of every view: headers, HEAD, body limits in the ASGI stack, the debug guard, WebSocket origins."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.asgi import application
from dashboard.asgi_limits import websocket_origin_trusted
from queues import EchoMQ

pytestmark = pytest.mark.django_db(transaction=True)


# Headers -----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("url", ["/", "/queue/?q=mail", "/audit/", "/cluster/", "/find/"])
def test_every_logged_in_page_says_no_store_and_carries_the_security_headers(viewer_client: Client,
                                                                             console_mq: EchoMQ, url: str) -> None:
    response = viewer_client.get(url)

    assert "no-store" in response["Cache-Control"]
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy


def test_the_login_page_is_not_stored_either_but_static_files_are_cached(client: Client, db: None) -> None:
    assert "no-store" in client.get("/login/")["Cache-Control"]
    static = client.get("/static/console.css")
    assert static.status_code == 200 and "no-store" not in static.get("Cache-Control", "")


def test_head_answers_like_get_without_a_body(viewer_client: Client, console_mq: EchoMQ) -> None:
    get = viewer_client.get("/audit/")
    head = viewer_client.head("/audit/")

    assert head.status_code == get.status_code == 200
    assert head.content == b"" and get.content
    assert viewer_client.head("/actions/job/").status_code == 405  # no GET there, so no HEAD


# Bodies in the ASGI stack (whatever server runs it) ---------------------------------------------------------------

async def _post(path: str, body_chunks: list[bytes], *, length: int | None, stall_after: int | None = None,
                timeout: float = 10) -> tuple[int, bytes, int]:
    """Posts to the ASGI application; returns (status, body, how many body messages it read)."""
    headers = [(b"host", b"localhost"), (b"content-type", b"application/x-www-form-urlencoded")]
    if length is not None:
        headers.append((b"content-length", str(length).encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000)}
    communicator = ApplicationCommunicator(application, scope)
    sent = 0
    for index, chunk in enumerate(body_chunks):
        if stall_after is not None and index == stall_after:
            break
        await communicator.send_input({"type": "http.request", "body": chunk,
                                       "more_body": index < len(body_chunks) - 1})
        sent += 1
    start = await communicator.receive_output(timeout)
    body = await communicator.receive_output(timeout)
    await communicator.wait(timeout)
    return start["status"], body.get("body", b""), sent


async def test_a_declared_length_over_the_limit_is_refused_before_any_body_is_read(settings: SettingsWrapper) -> None:
    settings.EMQ_MAX_BODY_BYTES = 1024 * 1024

    status, body, _ = await _post("/login/", [], length=200 * 1024 * 1024)

    assert status == 413 and b"larger than 8192 bytes" in body


async def test_a_body_without_a_length_is_counted_as_it_arrives(settings: SettingsWrapper) -> None:
    settings.EMQ_MAX_BODY_BYTES = 64 * 1024
    chunks = [b"x" * 16 * 1024] * 8

    status, body, _ = await _post("/actions/job/", chunks, length=None)

    assert status == 413 and b"larger than 65536 bytes" in body


async def test_the_orders_api_keeps_its_4_kib_limit(db: None) -> None:
    status, _, _ = await _post("/api/orders", [b"x" * 5000], length=None)

    assert status == 413


async def test_a_body_that_stalls_is_answered_408(settings: SettingsWrapper) -> None:
    settings.EMQ_BODY_TIMEOUT_S = 0.5

    status, body, _ = await _post("/login/", [b"username=a", b"&password=b"], length=100, stall_after=1)

    assert status == 408 and b"stalled" in body


async def test_a_malformed_length_is_answered_400(db: None) -> None:
    headers = [(b"host", b"localhost"), (b"content-length", b"12abc")]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/login/", "raw_path": b"/login/", "query_string": b"", "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000)}
    communicator = ApplicationCommunicator(application, scope)

    assert (await communicator.receive_output(5))["status"] == 400


async def test_a_body_within_the_limit_reaches_django_whole(db: None) -> None:
    status, body, _ = await _post("/login/", [b"username=nobody", b"&password=wrong"], length=None)

    assert status == 403 and b"CSRF" in body  # Django read it: its CSRF check refused the tokenless post


# The debug guard ---------------------------------------------------------------------------------------------------

async def _get(server: tuple[str, int] | None) -> int:
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/login/", "raw_path": b"/login/", "query_string": b"", "root_path": "",
             "headers": [(b"host", b"localhost")], "client": ("127.0.0.1", 40000), "server": server}
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await communicator.receive_output(10)
    await communicator.receive_output(10)
    await communicator.wait(10)
    return int(start["status"])


@pytest.mark.parametrize("server, status", [
    (("127.0.0.1", 8000), 200), (("::1", 8000), 200), (None, 200),
    (("10.1.2.3", 8000), 403), (("192.0.2.7", 8000), 403), (("0.0.0.0", 8000), 403),
])
async def test_with_debug_on_only_connections_to_a_loopback_address_are_answered(
        settings: SettingsWrapper, db: None, server: tuple[str, int] | None, status: int) -> None:
    settings.DEBUG = True

    assert await _get(server) == status


async def test_with_debug_off_every_address_is_answered(db: None) -> None:
    assert await _get(("10.1.2.3", 8000)) == 200


# WebSocket origins: the very check CSRF makes ------------------------------------------------------------------------

def _ws_scope(origin: str | None, host: str = "127.0.0.1:8000", scheme: str = "ws",
              extra: list[tuple[bytes, bytes]] | None = None) -> dict[str, Any]:
    headers = [(b"host", host.encode()), *(extra or [])]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return {"type": "websocket", "scheme": scheme, "path": "/ws/overview/", "raw_path": b"/ws/overview/",
            "query_string": b"", "root_path": "", "headers": headers, "client": ("127.0.0.1", 40000),
            "server": ("127.0.0.1", 8000)}


@pytest.mark.parametrize("origin, trusted", [
    ("http://127.0.0.1:8000", True),
    ("http://127.0.0.1:8299", False),  # another port on the same host: another origin
    ("https://127.0.0.1:8000", False),  # another scheme
    ("http://localhost:8000", False),  # a host ALLOWED_HOSTS names, but not the one the page came from
    ("http://127.0.0.1", False),
    ("null", False),
    (None, False),
])
def test_a_websocket_is_trusted_only_from_the_exact_origin_of_the_page(origin: str | None, trusted: bool) -> None:
    assert websocket_origin_trusted(_ws_scope(origin)) is trusted


def test_csrf_trusted_origins_are_trusted_for_websockets_too(settings: SettingsWrapper) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://console.example.com"]
    settings.ALLOWED_HOSTS = ["internal", "127.0.0.1"]

    assert websocket_origin_trusted(_ws_scope("https://console.example.com", host="internal:8000"))
    assert not websocket_origin_trusted(_ws_scope("https://evil.example.com", host="internal:8000"))


def test_behind_a_tls_proxy_the_page_origin_is_https(settings: SettingsWrapper) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.ALLOWED_HOSTS = ["console.example.com"]
    proxied = [(b"x-forwarded-proto", b"https")]

    assert websocket_origin_trusted(_ws_scope("https://console.example.com", host="console.example.com",
                                              extra=proxied))
    assert not websocket_origin_trusted(_ws_scope("http://console.example.com", host="console.example.com",
                                                  extra=proxied))


def test_a_host_outside_allowed_hosts_is_refused_whatever_the_origin() -> None:
    assert not websocket_origin_trusted(_ws_scope("http://evil.example:8000", host="evil.example:8000"))


async def test_the_asgi_stack_closes_the_handshake_of_a_foreign_origin(db: None) -> None:
    communicator = ApplicationCommunicator(application, _ws_scope("http://127.0.0.1:8299"))
    await communicator.send_input({"type": "websocket.connect"})

    assert await communicator.receive_output(5) == {"type": "websocket.close", "code": 1008}
    await asyncio.wait_for(communicator.wait(), 5)
