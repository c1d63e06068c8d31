"""`coordinator serve` in an OS process of its own, as a deployment runs it: for tests of what only a
real process shows (replicas, start-up, its log)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.conftest import free_port, wait_healthy
from tests.processes import stop_process


class ServedCoordinator:
    """Started at construction (migrating its database, as it does by default), its output in `log`."""

    def __init__(
        self, database_url: str, warehouse: str | Path, log: Path, *, advertise: bool = False, **env: str
    ) -> None:
        """`advertise`: the replica announces its URL, so other replicas forward commits to it."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self._sink = log.open("wb")
        settings = {"COORDINATOR_DATABASE_URL": database_url, "COORDINATOR_WAREHOUSE": str(warehouse)}
        if advertise:
            settings["COORDINATOR_ADVERTISE_URL"] = self.url
        self.process = subprocess.Popen(
            [sys.executable, "-m", "coordinator.cli", "serve", "--port", str(self.port)],
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
