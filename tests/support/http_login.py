"""Signing in to a real daphne the way a browser does (the login form, its CSRF token), with urllib."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def answer(opener: urllib.request.OpenerDirector, request: urllib.request.Request) -> tuple[int, str]:
    """The status and text of ``request``, an error status included; redirects are not followed."""
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def plain_opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(_NoRedirect)


@dataclass(frozen=True)
class Session:
    """A signed-in browser: its login's status, and the cookies and CSRF token a form post carries."""

    status: int
    cookie: str
    csrf: str


def form_log_in(url: str, username: str, password: str, headers: dict[str, str] | None = None) -> Session:
    """Gets the login form, posts it (with ``headers`` on both requests); 302 means signed in."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect)
    _, form = answer(opener, urllib.request.Request(url + "login/", headers=headers or {}))
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert match, form[:300]
    body = urllib.parse.urlencode({"username": username, "password": password,
                                   "csrfmiddlewaretoken": match.group(1)}).encode()
    status, _ = answer(opener, urllib.request.Request(url + "login/", body, headers={
        **(headers or {}), "Referer": url + "login/"}))
    cookies = {c.name: c.value or "" for c in jar}
    return Session(status, "; ".join(f"{k}={v}" for k, v in cookies.items()), cookies.get("csrftoken", ""))
