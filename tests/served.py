"""`coordinator serve` in an OS process of its own, as a deployment runs it: for tests of what only a
real process shows (replicas, start-up, its log)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text

from tests.conftest import OWNED_TABLES, free_port, wait_healthy
from tests.processes import stop_process

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
        **env: str,
    ) -> None:
        """`advertise`: the replica announces its URL, so other replicas forward commits to it.
        `stop_at`: ("module:Class.method" or "module:function", n, marker) makes the process stop at
        the nth call of it, touching `marker` (the code under test is not changed)."""
        self.port = free_port()
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
            env={**os.environ, **settings, **env},
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
        ServedCoordinator(pg_url, warehouse, tmp_path / f"replica-{i}.log", **env) for i in range(count)
    ]
    try:
        for replica in replicas:
            replica.wait_healthy()
        yield replicas
    finally:
        for replica in replicas:
            replica.stop()
