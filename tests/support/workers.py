"""`coordinator serve --workers N` seen from outside: its worker processes, each worker's own counters,
and a load of streaming writers that resend on connection errors as Paimon's writers do."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from tests.support.commits import append_commit, post_commit
from tests.support.paimon_files import PaimonTable


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def worker_pids(parent: int) -> set[int]:
    """The live worker processes of the supervisor `parent` (multiprocessing's spawned children, not its
    resource tracker)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = _stat(int(entry))
            if int(fields[1]) != parent or fields[0] == "Z":
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if b"spawn_main" in command:
            found.add(int(entry))
    return found


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not)."""
    try:
        return _stat(pid)[0] != "Z"
    except OSError:
        return False


def wait_for(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds:g}s: {what}"
        time.sleep(0.1)


def metrics_dir(worker: int) -> Path:
    """The folder the workers keep their metrics in, from a worker's environment."""
    with open(f"/proc/{worker}/environ", "rb") as f:
        variables = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
    return Path(variables[b"PROMETHEUS_MULTIPROC_DIR"].decode())


def sample_sum(families: Any, name: str, **labels: str) -> float:
    return sum(
        float(s.value)
        for family in families
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def per_worker(folder: Path, name: str, **labels: str) -> dict[int, float]:
    """Counter `name` (its samples with `labels`) as each worker process counted it, by pid: each
    worker's file collected alone."""
    counted = {}
    for path in folder.glob("counter_*.db"):
        pid = int(path.stem.rsplit("_", 1)[1])
        with tempfile.TemporaryDirectory() as alone:
            shutil.copy(path, alone)
            registry = CollectorRegistry()
            MultiProcessCollector(registry, path=alone)  # type: ignore[no-untyped-call]
            counted[pid] = sample_sum(list(registry.collect()), name, **labels)
    return counted


def exposed(url: str, name: str, **labels: str) -> float:
    """Counter `name` (its samples with `labels`, summed) as GET /metrics shows it."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    return sample_sum(text_string_to_metric_families(text), name, **labels)


@dataclass
class StreamingLoad:
    """`senders` threads, each a streaming writer (its own commit user, identifiers 1, 2, ...) making
    `commits` 1-file appends over `tables` in turn, each on a keep-alive connection of its own. A commit
    whose answer is lost (a connection error: its worker died) or that is told to come back later (503,
    429) is sent again as it was, as Paimon's writers do."""

    url: str
    tables: Sequence[PaimonTable]
    senders: int
    commits: int
    acknowledged: list[tuple[str, int]] = field(default_factory=list)
    connection_errors: int = 0
    errors: list[BaseException] = field(default_factory=list)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def row_id(self, sender: int, k: int) -> int:
        return sender * 100_000 + k

    def table_of(self, sender: int, k: int) -> PaimonTable:
        return self.tables[(sender * 7 + k) % len(self.tables)]

    def expected(self) -> dict[str, list[int]]:
        """Each table's row ids once every commit is in."""
        rows: dict[str, list[int]] = {t.id: [] for t in self.tables}
        for sender in range(self.senders):
            for k in range(1, self.commits + 1):
                rows[self.table_of(sender, k).id].append(self.row_id(sender, k))
        return {table: sorted(ids) for table, ids in rows.items()}

    def start(self) -> list[threading.Thread]:
        threads = [threading.Thread(target=self._send, args=(s,)) for s in range(self.senders)]
        for thread in threads:
            thread.start()
        return threads

    def run(self) -> None:
        for thread in self.start():
            thread.join()

    def _send(self, sender: int) -> None:
        try:
            with httpx.Client(base_url=self.url, timeout=120) as client:
                for k in range(1, self.commits + 1):
                    table = self.table_of(sender, k)
                    body = append_commit(
                        table, [{"id": self.row_id(sender, k)}], user=f"sender-{sender}", identifier=k
                    )
                    self._until_acknowledged(client, table, body)
                    with self._guard:
                        self.acknowledged.append((table.id, self.row_id(sender, k)))
        except BaseException as error:  # surfaced by the test: a sender's failure fails it
            self.errors.append(error)

    def _until_acknowledged(self, client: httpx.Client, table: PaimonTable, body: dict[str, Any]) -> None:
        deadline = time.monotonic() + 180
        while True:
            assert time.monotonic() < deadline, "a commit was not acknowledged within 180s"
            try:
                answer = post_commit(client, table, body)
            except httpx.TransportError:
                with self._guard:
                    self.connection_errors += 1
                time.sleep(0.2)
                continue
            if answer.status_code in (200, 201):
                return
            assert answer.status_code in (429, 503), answer.text
            time.sleep(min(float(answer.headers.get("retry-after", "0.5")), 2.0))
