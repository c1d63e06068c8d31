"""The coordinator as a real `coordinator serve` subprocess, and the metadata databases it runs on."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

import httpx

from tests.support import databases
from tests.support.processes import stop_process

REPO = Path(__file__).resolve().parent.parent
PG_SERVER = os.environ.get("COORDINATOR_BENCH_PG", "postgresql+psycopg://postgres@127.0.0.1:5432")
START_TIMEOUT_S = 60.0


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def sqlite_url(directory: Path) -> str:
    """A fresh SQLite file in the run's temp folder."""
    return f"sqlite:///{directory / 'coordinator.db'}"


@contextmanager
def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database for one run; dropped on exit even after a failure."""
    with databases.postgres_database("coordinator_bench", PG_SERVER) as url:
        yield url


CHECKED_OUT = ("service", "client", "format", "migrations")
"""What a service needs of a checkout: its code, its client models, Paimon's format (format/, inside
client/ in revisions from before it was a distribution of its own) and its database migrations."""


def service_env(source: Path) -> dict[str, str]:
    """This process's environment, with the service, client and format code of the checkout at `source`."""
    folders = ("format", "client", "service")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(str(source / d) for d in folders)}


def folders_at(revision: str, folders: Sequence[str]) -> list[str]:
    """Those of `folders` that the tree of `revision` has (format/ is younger than the others)."""
    done = subprocess.run(
        ["git", "-C", str(REPO), "ls-tree", "--name-only", revision, "--", *folders],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


class CoordinatorProcess:
    """`python -m coordinator.cli serve` on a free port; a context manager that always stops it.

    The service's code comes from `source` (a checkout with service/ and client/ folders): this
    repository's by default, another revision's for a baseline (bench/replicas.py).
    """

    def __init__(
        self,
        database_url: str,
        warehouse: Path | str,
        log_path: Path,
        source: Path = REPO,
        workers: int | None = None,
    ) -> None:
        """`workers`: run with `--workers N` (a revision without the flag refuses it: leave it None)."""
        self.port = free_port()
        self.workers = workers
        self.source = source
        self.url = f"http://127.0.0.1:{self.port}"
        self.warehouse = warehouse
        self._log_path = log_path
        self._database_url = database_url
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> CoordinatorProcess:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Spawn the service and wait until /health answers (it migrates the database at start)."""
        # Replicas of a revision that has it forward commits to the one holding the table's lock (an
        # older revision ignores the variable).
        env = {**service_env(self.source), "COORDINATOR_ADVERTISE_URL": self.url}
        cmd = [
            sys.executable,
            "-m",
            "coordinator.cli",
            "serve",
            "--database-url",
            self._database_url,
            "--warehouse",
            str(self.warehouse),
            "--port",
            str(self.port),
        ]
        if self.workers is not None:
            # Each worker advertises its own private port (scheme and host of COORDINATOR_ADVERTISE_URL).
            cmd += ["--workers", str(self.workers)]
        with open(self._log_path, "ab") as log:
            self._process = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        self._wait_healthy()

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise RuntimeError(f"coordinator exited at start; log:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"coordinator not healthy after {START_TIMEOUT_S:g}s; log:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM (uvicorn shuts down cleanly and disposes the pool), SIGKILL if it hangs."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        stop_process(process)

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("the coordinator is not running")
        return self._process.pid

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self._log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
