"""A PostgreSQL server of the test's own, on a free loopback port, that the test may kill and restart.

The machine's shared server (127.0.0.1:5432) serves every other test at the same time and must never go
down; a test of what a database crash does to the coordinator starts one of these instead. Debian's
binaries (/usr/lib/postgresql/<version>/bin), a cluster made by initdb in a temporary folder, trust
auth, no Unix socket outside that folder. initdb and postgres refuse to run as root, so as root (CI, the
dev containers) both run as the `postgres` OS user, in a folder that user owns.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

BIN_ROOT = Path("/usr/lib/postgresql")
START_TIMEOUT_S = 60.0
SERVER_USER = "postgres"
"""The OS user the server runs as when the tests run as root."""


def _bin_dir() -> Path:
    versions = sorted(
        (p for p in BIN_ROOT.glob("*/bin") if (p / "postgres").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if not versions:
        raise RuntimeError(f"no PostgreSQL binaries under {BIN_ROOT}: run .ci/services.sh (make services)")
    return versions[-1]


class PrivatePostgres:
    """One cluster in a temporary folder; `start` (initdb the first time), `kill` (SIGKILL the postmaster,
    as a crash), `start` again on the same data and port, `close` (stop, and remove the folder)."""

    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="private-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as: dict[str, Any] = {}
        if os.geteuid() == 0:
            user = pwd.getpwnam(SERVER_USER)
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        self.process: subprocess.Popen[bytes] | None = None
        self._initialised = False

    def url(self, database: str = "postgres") -> str:
        """The SQLAlchemy URL of `database` on this server."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        """Start the server (creating the cluster the first time) and wait until it takes connections."""
        if not self._initialised:
            self._run(
                "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"
            )
            self._initialised = True
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(
                [
                    str(self.bin / "postgres"),
                    "-D", str(self.data),
                    "-h", "127.0.0.1",
                    "-p", str(self.port),
                    "-k", str(self.root),
                    # The test kills processes, not the machine: the page cache outlives every crash here.
                    "-c", "fsync=off",
                    "-c", "max_connections=200",
                ],
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=self.root,
                start_new_session=True,
                **self._as,
            )  # fmt: skip
        self._wait_ready()

    def kill(self) -> None:
        """SIGKILL the postmaster, as a crash does, and wait until every process it started is gone (its
        backends notice its death and exit; a new postmaster refuses to start beside them)."""
        assert self.process is not None, "not started"
        children = _children(self.process.pid)
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.process = None
        deadline = time.monotonic() + START_TIMEOUT_S
        while any(_alive(pid) for pid in children):
            if time.monotonic() > deadline:
                raise TimeoutError(f"PostgreSQL's processes {children} outlived their postmaster")
            time.sleep(0.02)

    def stop(self) -> None:
        """A fast shutdown (SIGINT), as `pg_ctl stop -m fast`; SIGKILL if it hangs."""
        if self.process is None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        self.process = None

    def close(self) -> None:
        """Stop the server and remove its folder."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [str(self.bin / program), *args], cwd=self.root, capture_output=True, check=False, **self._as
        )
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stderr.decode(errors='replace')[-2000:]}")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"PostgreSQL exited at start; its log:\n{self.log.read_text()[-3000:]}")
            try:
                with psycopg.connect(
                    host="127.0.0.1", port=self.port, user="postgres", dbname="postgres", connect_timeout=2
                ) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"PostgreSQL not ready after {START_TIMEOUT_S:g} s") from None
                time.sleep(0.05)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (a postmaster's backends and auxiliary processes)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A started private server; stopped and removed at exit, even after a failure."""
    server = PrivatePostgres()
    try:
        server.start()
        yield server
    finally:
        server.close()
