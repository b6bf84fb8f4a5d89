from __future__ import annotations

import pytest
from django.test import Client

from dashboard.actions.access import may
from dashboard.permissions import ACTION_PERMISSIONS


@pytest.mark.parametrize("url", ["/", "/queue/?q=mail", "/job/?q=mail&id=j1", "/find/?id=j1", "/job/payload/?q=mail&id=j1"])
def test_it_redirects_anonymous_requests_to_the_login_page(client: Client, url: str, db: None) -> None:
    response = client.get(url)

    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_a_viewer_logs_in_with_the_form_and_sees_the_overview(client: Client, viewer: object, console_mq: object) -> None:
    response = client.post("/login/", {"username": "vera", "password": "vera-password"}, follow=True)

    assert response.status_code == 200
    assert b"vera \xc2\xb7 viewer" in response.content


def test_roles_give_operators_every_action_and_viewers_none(viewer: object, operator: object) -> None:
    assert all(may(operator, action) for action in ACTION_PERMISSIONS)
    assert not any(may(viewer, action) for action in ACTION_PERMISSIONS)
