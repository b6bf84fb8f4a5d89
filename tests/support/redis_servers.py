"""Private redis-server processes for tests and benchmarks, on free ports.

Tests never use the machine's 6379: they start their own servers so that they
can kill, restart and flush them, and pass on a machine without any Redis.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
# A server (or a console) dies with the test process that started it, however that ends (a SIGKILL too):
# setpriv sets PR_SET_PDEATHSIG and execs the command. The signal follows the starting *thread*, so only
# a process started on the main thread (every fixture) gets it.
SETPRIV = shutil.which("setpriv")
# A cluster node's bus port is its port + 10000, which must stay below 65536.
MAX_CLUSTER_PORT = 55535


def dies_with_this_process() -> list[str]:
    """The prefix of a command line that makes the process end when this one does (see SETPRIV)."""
    if SETPRIV and threading.current_thread() is threading.main_thread():
        return [SETPRIV, "--pdeathsig", "TERM"]
    return []


def free_port(maximum: int = 65535) -> int:
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if port <= maximum and port != 6379:
            if maximum == MAX_CLUSTER_PORT and not _port_free(port + 10000):
                continue
            return port
    raise RuntimeError("no free port found")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@dataclass
class RedisServer:
    port: int = 0
    cluster: bool = False
    extra_args: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None
    workdir: Path | None = None

    def __post_init__(self) -> None:
        if not self.port:
            self.port = free_port(MAX_CLUSTER_PORT if self.cluster else 65535)
        self.workdir = Path(tempfile.mkdtemp(prefix=f"emq-redis-{self.port}-"))

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        args = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", str(self.workdir), "--protected-mode", "no"]
        if self.cluster:
            args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                     "--cluster-node-timeout", "1000"]
        self.process = subprocess.Popen(dies_with_this_process() + args + self.extra_args, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with redis.Redis(port=self.port, socket_timeout=1) as client:
                    if client.ping():
                        return
            except redis.exceptions.RedisError:
                time.sleep(0.02)
        raise RuntimeError(f"redis-server on port {self.port} did not start")

    def client(self, **options: object) -> redis.Redis:
        return redis.Redis(port=self.port, **options)  # type: ignore[arg-type]

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def cleanup(self) -> None:
        self.stop()
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


@dataclass
class RedisClusterNodes:
    """A real Redis Cluster on loopback: ``masters`` primaries with ``replicas`` each."""

    masters: int = 3
    replicas: int = 0
    servers: list[RedisServer] = field(default_factory=list)
    # e.g. ["--repl-diskless-sync-delay", "0"]: replicas sync at once instead of after 5 s.
    server_args: list[str] = field(default_factory=list)

    def start(self) -> RedisClusterNodes:
        self.servers = [RedisServer(cluster=True, extra_args=list(self.server_args)).start()
                        for _ in range(self.masters * (1 + self.replicas))]
        addresses = [f"127.0.0.1:{s.port}" for s in self.servers]
        subprocess.run([REDIS_CLI, "--cluster", "create", *addresses, "--cluster-replicas", str(self.replicas),
                        "--cluster-yes"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=60)
        self.wait_ok()
        return self

    def wait_ok(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            alive = [s for s in self.servers if s.process]
            try:
                if all(b"cluster_state:ok" in s.client(socket_timeout=1).execute_command("CLUSTER", "INFO")
                       for s in alive):
                    return
            except redis.exceptions.RedisError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the cluster did not reach cluster_state:ok")

    @property
    def url(self) -> str:
        return self.servers[0].url

    def cleanup(self) -> None:
        for server in self.servers:
            server.cleanup()
