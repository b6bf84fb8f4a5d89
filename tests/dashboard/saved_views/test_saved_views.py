"""Saved views: saved from a page, opened by permalink, frozen windows, and who may open which (a test per role)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.actions.models import QueueGrant
from dashboard.orders.tokens import api_token_create
from dashboard.roles import OPERATORS, VIEWERS, user_create
from dashboard.saved_views.models import SavedView
from dashboard.saved_views.services import view_save
from queues import EchoMQ
from tests.support.jobs import failed_job, failed_jobs

pytestmark = pytest.mark.django_db(transaction=True)


def _client(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _ids(client: Client, view: SavedView) -> list[tuple[str, str]]:
    response = client.get(f"/api/views/{view.pk}/jobs")
    assert response.status_code == 200, response.content
    return [(row["queue"], row["id"]) for row in response.json()["ids"]]


@pytest.fixture
def vera(db: None) -> User:
    return user_create(username="vera", password="vera-password", role=VIEWERS)


@pytest.fixture
def walt(db: None) -> User:
    return user_create(username="walt", password="walt-password", role=VIEWERS)


@pytest.fixture
def oscar(db: None) -> User:
    """An operator whose grants leave out every queue but billing-*."""
    user = user_create(username="oscar", password="oscar-password", role=OPERATORS)
    QueueGrant.objects.create(user=user, pattern="billing-*")
    return User.objects.get(pk=user.pk)


@pytest.fixture
def nora(db: None) -> User:
    return User.objects.create_user(username="nora", password="nora-password")


# Frozen windows ---------------------------------------------------------------------------------------------

def test_a_frozen_window_link_returns_the_same_ids_every_time_however_many_fail_after_it(
        console_mq: EchoMQ, vera: User) -> None:
    start_ms = console_mq.server_time_ms("mail")
    before = set(failed_jobs(console_mq, "mail", 7, error="smtp down"))
    frozen = view_save(user=vera, name="smtp outage", kind="search", freeze=True,
                       data={"q": "mail", "state": "failed", "error": "smtp", "finished_after": str(start_ms)})
    moving = view_save(user=vera, name="smtp since", kind="search",
                       data={"q": "mail", "state": "failed", "error": "smtp", "finished_after": str(start_ms)})
    client = _client(vera)

    first = _ids(client, frozen)
    later = set(failed_jobs(console_mq, "mail", 5, error="smtp down"))
    answers = [_ids(client, frozen) for _ in range(3)]

    assert {job_id for _, job_id in first} == before
    assert all(answer == first for answer in answers)
    assert {job_id for _, job_id in _ids(client, moving)} == before | later
    assert frozen.frozen and frozen.params["finished_before"].isdigit()


def test_freezing_a_relative_age_stores_absolute_times(console_mq: EchoMQ, vera: User) -> None:
    failed_job(console_mq, "mail", "a")

    view = view_save(user=vera, name="last hour", kind="search", freeze=True,
                     data={"q": "mail", "state": "failed", "finished_after": "1h"})

    assert view.params["finished_after"].isdigit() and view.params["finished_before"].isdigit()
    assert int(view.params["finished_before"]) - int(view.params["finished_after"]) == 3_600_000


def test_only_a_search_can_be_frozen(console_mq: EchoMQ, vera: User) -> None:
    response = _client(vera).post("/views/save/", {"name": "q", "kind": "queue", "q": "mail", "freeze": "1"})

    assert response.status_code == 400 and b"only a search has a time window to freeze" in response.content
    assert not SavedView.objects.exists()


# Saving from the pages ---------------------------------------------------------------------------------------

def test_a_search_saved_from_the_page_opens_by_its_permalink(console_mq: EchoMQ, vera: User) -> None:
    failed_job(console_mq, "mail", "a")
    client = _client(vera)
    page = client.get("/search/", {"q": "mail", "state": "failed", "id_prefix": "a"})
    assert b'action="/views/save/"' in page.content

    saved = client.post("/views/save/", {"name": "a-jobs", "kind": "search", "q": "mail", "state": "failed",
                                         "id_prefix": "a", "shared": "1"})
    view = SavedView.objects.get(name="a-jobs")
    opened = client.get(f"/views/{view.pk}/")

    assert saved.status_code == 302 and view.shared and not view.frozen
    assert opened.status_code == 302 and opened["Location"].startswith("/search/?")
    assert "id_prefix=a" in opened["Location"] and "q=mail" in opened["Location"]
    assert _ids(client, view) == [("mail", "a")]


def test_a_queue_page_and_a_failures_view_keep_their_filters(console_mq: EchoMQ, vera: User) -> None:
    failed_job(console_mq, "mail", "a")
    client = _client(vera)
    assert b'action="/views/save/"' in client.get("/queue/", {"q": "mail", "state": "failed"}).content
    assert b'action="/views/save/"' in client.get("/failures/", {"q": "mail"}).content

    client.post("/views/save/", {"name": "failed mail", "kind": "queue", "q": "mail", "state": "failed",
                                 "order": "desc", "limit": "50"})
    client.post("/views/save/", {"name": "mail causes", "kind": "failures", "q": "mail"})
    page = SavedView.objects.get(name="failed mail")
    causes = SavedView.objects.get(name="mail causes")

    assert client.get(f"/views/{page.pk}/")["Location"] == "/queue/?q=mail&state=failed&order=desc&limit=50"
    assert client.get(f"/views/{causes.pk}/")["Location"] == "/failures/?q=mail"
    assert _ids(client, page) == [("mail", "a")]
    groups = client.get(f"/api/views/{causes.pk}/jobs").json()["groups"]
    assert [g["count"] for g in groups] == [1]


def test_a_bad_filter_is_refused_in_words_and_nothing_is_saved(console_mq: EchoMQ, vera: User) -> None:
    response = _client(vera).post("/views/save/", {"name": "bad", "kind": "search", "q": "mail", "state": "failed",
                                                   "finished_after": "yesterday-ish"})

    assert response.status_code == 400 and b"cannot read the time" in response.content
    assert not SavedView.objects.exists()


def test_a_pinned_view_is_on_its_readers_overview_only(console_mq: EchoMQ, vera: User, walt: User) -> None:
    failed_job(console_mq, "mail", "a")
    view = view_save(user=vera, name="pinned-failures", kind="failures", data={"q": "mail"}, shared=True)

    assert _client(vera).post(f"/views/{view.pk}/pin/", {"pinned": "1"}).status_code == 302

    assert b"pinned-failures" in _client(vera).get("/").content
    assert b"pinned-failures" not in _client(walt).get("/").content


# Who may open which: one test per role ---------------------------------------------------------------------

@pytest.fixture
def views(console_mq: EchoMQ, vera: User) -> dict[str, SavedView]:
    failed_job(console_mq, "mail", "secret-mail-job")
    failed_job(console_mq, "billing-eu", "billing-job")
    return {
        "private": view_save(user=vera, name="mine", kind="queue", data={"q": "mail", "state": "failed"}),
        "shared": view_save(user=vera, name="ours", kind="queue", data={"q": "mail", "state": "failed"}, shared=True),
        "billing": view_save(user=vera, name="billing", kind="queue", data={"q": "billing-eu", "state": "failed"},
                             shared=True),
        "everywhere": view_save(user=vera, name="everywhere", kind="search", shared=True,
                                data={"state": "failed", "id_prefix": "b"}),
    }


def _answers(user: User | None, views: dict[str, SavedView]) -> dict[str, tuple[int, int]]:
    client = _client(user)
    return {name: (client.get(f"/views/{view.pk}/").status_code, client.get(f"/api/views/{view.pk}/jobs").status_code)
            for name, view in views.items()}


def test_the_owner_opens_their_private_and_shared_views(views: dict[str, SavedView], vera: User) -> None:
    assert _answers(vera, views) == {"private": (302, 200), "shared": (302, 200), "billing": (302, 200),
                                     "everywhere": (302, 200)}


def test_another_viewer_opens_the_shared_views_and_not_the_private_one(views: dict[str, SavedView], walt: User) -> None:
    client = _client(walt)
    listed = {v["name"] for v in client.get("/api/views").json()["views"]}

    assert _answers(walt, views) == {"private": (404, 404), "shared": (302, 200), "billing": (302, 200),
                                     "everywhere": (302, 200)}
    assert listed == {"ours", "billing", "everywhere"}
    assert b"secret-mail-job" not in client.get(f"/api/views/{views['private'].pk}/jobs").content


def test_an_operator_whose_grants_leave_the_queue_out_gets_403_and_never_its_data(
        views: dict[str, SavedView], oscar: User) -> None:
    client = _client(oscar)
    bodies = [client.get(f"/api/views/{views[name].pk}/jobs").content for name in ("shared", "everywhere")]
    listed = {v["name"] for v in client.get("/api/views").json()["views"]}

    assert _answers(oscar, views) == {"private": (404, 404), "shared": (403, 403), "billing": (302, 200),
                                      "everywhere": (403, 403)}
    assert all(b"secret-mail-job" not in body and b"billing-job" not in body for body in bodies)
    assert listed == {"billing"}
    assert _ids(client, views["billing"]) == [("billing-eu", "billing-job")]


def test_an_account_without_a_console_role_gets_403_everywhere(views: dict[str, SavedView], nora: User) -> None:
    client = _client(nora)

    assert _answers(nora, views) == {name: (403, 403) for name in views}
    assert client.get("/views/").status_code == 403 and client.get("/api/views").status_code == 403


def test_anonymous_visitors_go_to_the_login_page_and_api_callers_get_401(views: dict[str, SavedView]) -> None:
    assert _answers(None, views) == {name: (302, 401) for name in views}
    assert _client(None).get(f"/views/{views['shared'].pk}/")["Location"].startswith("/login/")


def test_a_restricted_operator_cannot_save_a_view_of_a_queue_outside_the_grant(console_mq: EchoMQ, oscar: User) -> None:
    client = _client(oscar)
    refused = client.post("/views/save/", {"name": "mail", "kind": "failures", "q": "mail"})
    every = client.post("/views/save/", {"name": "all", "kind": "search", "state": "failed", "id_prefix": "a"})
    allowed = client.post("/views/save/", {"name": "billing", "kind": "failures", "q": "billing-eu"})

    assert (refused.status_code, every.status_code, allowed.status_code) == (403, 403, 302)
    assert list(SavedView.objects.values_list("name", flat=True)) == ["billing"]


def test_only_the_owner_deletes_a_view(views: dict[str, SavedView], walt: User, vera: User) -> None:
    shared = views["shared"]

    assert _client(walt).post(f"/views/{shared.pk}/delete/").status_code == 404
    assert _client(walt).delete(f"/api/views/{shared.pk}").status_code == 404
    assert SavedView.objects.filter(pk=shared.pk).exists()
    assert _client(vera).delete(f"/api/views/{shared.pk}").status_code == 200
    assert not SavedView.objects.filter(pk=shared.pk).exists()


def test_the_api_saves_a_view_and_a_read_only_token_may_not(console_mq: EchoMQ, vera: User) -> None:
    body: dict[str, Any] = {"name": "api view", "kind": "search", "params": {"q": "mail", "state": "failed",
                                                                             "error": "boom"}, "shared": True}
    read_only = {"Authorization": f"Bearer {api_token_create(user=vera, name='r', scope='read')}"}
    acting = {"Authorization": f"Bearer {api_token_create(user=vera, name='a', scope='act')}"}
    client = Client()

    refused = client.post("/api/views", json.dumps(body), content_type="application/json", headers=read_only)
    made = client.post("/api/views", json.dumps(body), content_type="application/json", headers=acting)

    assert refused.status_code == 403
    assert made.status_code == 201 and made.json()["shared"] is True and made.json()["permalink"].startswith("/views/")
