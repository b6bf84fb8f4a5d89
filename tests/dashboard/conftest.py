"""Personas (a viewer and an operator) and a console pointed at a real, empty redis-server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.census import census_reset
from dashboard.roles import OPERATORS, VIEWERS, user_create
from queues import EchoMQ
from queues.follower import Follower
from tests.support.sessions import session_cookie


@pytest.fixture
def console_mq(mq: EchoMQ, redis_url: str, settings: SettingsWrapper) -> Iterator[EchoMQ]:
    """The test's EchoMQ client, with the console reading the same server."""
    settings.EMQ_REDIS_URL = redis_url
    census_reset()
    yield mq
    census_reset()


@pytest.fixture
def viewer(db: None) -> User:
    return user_create(username="vera", password="vera-password", role=VIEWERS)


@pytest.fixture
def operator(db: None) -> User:
    return user_create(username="otto", password="otto-password", role=OPERATORS)


@pytest.fixture
def viewer_client(viewer: User) -> Client:
    client = Client()
    client.force_login(viewer)
    return client


@pytest.fixture
def operator_client(operator: User) -> Client:
    client = Client()
    client.force_login(operator)
    return client


@pytest.fixture
def viewer_cookie(viewer: User) -> bytes:
    return session_cookie(viewer)


@pytest.fixture
def operator_cookie(operator: User) -> bytes:
    return session_cookie(operator)


@pytest.fixture
async def stop_followers() -> AsyncIterator[None]:
    """Stops this process's followers after a socket test, so none outlives its event loop."""
    yield
    await Follower.stop_all()
