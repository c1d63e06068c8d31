"""The coordinator served for a test: `LiveServer`, uvicorn in a thread of the test's process, and
`ServedCoordinator`, `coordinator serve` in an OS process of its own, as a deployment runs it, for
tests of what only a real process shows (replicas, start-up, its log)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from sqlalchemy import create_engine, text

from coordinator.app import create_app
from coordinator.services import Services
from coordinator.settings import Settings
from tests.support.databases import OWNED_TABLES
from tests.support.processes import stop_process


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_healthy(url: str, process: subprocess.Popen[Any] | None = None, seconds: float = 60) -> None:
    """Until GET /health answers 200; fails early if the server's `process` exited."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process is None or process.poll() is None, "coordinator exited at start"
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise TimeoutError(f"coordinator at {url} did not become healthy")


class LiveServer:
    """A real uvicorn server on a free loopback port, in a thread of this process."""

    def __init__(self, settings: Settings) -> None:
        self.app = create_app(settings)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    @property
    def url(self) -> str:
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    @property
    def services(self) -> Services:
        """The server's use cases, e.g. to play a second writer of the same instance."""
        services: Services = self.app.state.services
        return services

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)


STOP_AT = """
import sys, threading, time
from pathlib import Path
from {module} import {owner}
target, calls, marker = {qualified}.__code__, [0], Path({marker!r})

def trace(frame, event, arg):
    if event == "call" and frame.f_code is target:
        calls[0] += 1
        if calls[0] == {nth}:
            marker.touch()
            time.sleep(3600)  # until the test kills the process
    return None

sys.settrace(trace)
threading.settrace(trace)
from coordinator.cli import main
sys.exit(main(sys.argv[1:]))
"""
"""A `coordinator serve` that stops dead at the nth call of a function, as a process does the instant
it is killed there: the test waits for the marker file, then SIGKILLs it."""


class ServedCoordinator:
    """Started at construction (migrating its database, as it does by default), its output in `log`."""

    def __init__(
        self,
        database_url: str,
        warehouse: str | Path,
        log: Path,
        *,
        advertise: bool = False,
        stop_at: tuple[str, int, Path] | None = None,
        env: Mapping[str, str] | None = None,
        port: int | None = None,
    ) -> None:
        """`advertise`: the replica announces its URL, so other replicas forward commits to it.
        `stop_at`: ("module:Class.method" or "module:function", n, marker) makes the process stop at
        the nth call of it, touching `marker` (the code under test is not changed). `env`: variables
        set in its environment besides the database and the warehouse (COORDINATOR_* settings). `port`:
        the port of a replica killed before, so its clients find it again (default: a free one)."""
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self._sink = log.open("wb")
        settings = {"COORDINATOR_DATABASE_URL": database_url, "COORDINATOR_WAREHOUSE": str(warehouse)}
        if advertise:
            settings["COORDINATOR_ADVERTISE_URL"] = self.url
        program = ["-m", "coordinator.cli"]
        if stop_at is not None:
            where, nth, marker = stop_at
            module, _, qualified = where.partition(":")
            owner = qualified.partition(".")[0]
            code = STOP_AT.format(
                module=module, owner=owner, qualified=qualified, nth=nth, marker=str(marker)
            )
            program = ["-c", code]
        self.process = subprocess.Popen(
            [sys.executable, *program, "serve", "--port", str(self.port)],
            env={**os.environ, **settings, **(env or {})},
            stdout=self._sink,
            stderr=subprocess.STDOUT,
        )
        self.http = httpx.Client(base_url=self.url, timeout=60)

    def wait_healthy(self) -> None:
        """Until /health answers 200; fails with the tail of its log if it exits or never does."""
        try:
            wait_healthy(self.url, self.process)
        except (AssertionError, TimeoutError) as error:
            raise AssertionError(f"{error}; its log:\n{self.log.read_text()[-4000:]}") from None

    def stop(self) -> None:
        self.http.close()
        stop_process(self.process)
        self._sink.close()

    def __enter__(self) -> ServedCoordinator:
        self.wait_healthy()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def emptied_replicas(
    pg_url: str, warehouse: Path, tmp_path: Path, count: int, **env: str
) -> Iterator[list[ServedCoordinator]]:
    """`count` replicas on the session's PostgreSQL database, emptied first; stopped at the end."""
    engine = create_engine(pg_url)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {', '.join(OWNED_TABLES)} RESTART IDENTITY CASCADE"))
    engine.dispose()
    replicas = [
        ServedCoordinator(pg_url, warehouse, tmp_path / f"replica-{i}.log", env=env) for i in range(count)
    ]
    try:
        for replica in replicas:
            replica.wait_healthy()
        yield replicas
    finally:
        for replica in replicas:
            replica.stop()
