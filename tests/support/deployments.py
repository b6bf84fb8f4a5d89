"""A console over two deployments: staging, a private redis-server (which a test may stop), and production, the
3-master cluster; and people holding the groups the deployments' grants name."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.contrib.auth.models import Group
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.census import census_reset
from dashboard.fan_out import forget_fan_out_clients
from dashboard.roles import user_create
from dashboard.services import forget_clients
from queues import EchoMQ
from queues.connection import connect
from tests.support.redis_servers import RedisClusterNodes, RedisServer


@dataclass
class Deployments:
    staging: EchoMQ
    production: EchoMQ
    staging_server: RedisServer


@contextmanager
def staging_and_production(redis_cluster: RedisClusterNodes, settings: SettingsWrapper) -> Iterator[Deployments]:
    """staging (acted on by staging-ops) and production (seen by oncall, acted on by sre), both emptied."""
    server = RedisServer().start()
    for node in redis_cluster.servers:
        node.client().flushall()
    settings.EMQ_DEPLOYMENTS = json.dumps({
        "staging": {"url": server.url, "act": ["staging-ops"]},
        "production": {"url": redis_cluster.url, "production": True, "view": ["oncall"], "act": ["sre"]},
    })
    settings.EMQ_DEPLOYMENT_BUDGET_S = 1.0
    census_reset()
    staging, production = EchoMQ(connect(server.url), actor="test"), EchoMQ(connect(redis_cluster.url), actor="test")
    try:
        yield Deployments(staging, production, server)
    finally:
        staging.close()
        production.close()
        forget_clients()
        forget_fan_out_clients()
        census_reset()
        if server.process:
            server.process.send_signal(signal.SIGCONT)
        server.cleanup()


def person(username: str, role: str, *groups: str) -> Client:
    """A signed-in client of a new account with ``role``, in ``groups``."""
    user = user_create(username=username, password=f"{username}-password", role=role)
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    client = Client()
    client.force_login(user)
    return client
