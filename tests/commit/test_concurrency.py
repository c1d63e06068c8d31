"""Two service processes on one PostgreSQL, eight writer threads: every commit lands exactly once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from coordinator_client import CommitResponse, CoordinatorClient
from tests.support.commits import append_commit
from tests.support.paimon_files import PaimonTable, pypaimon_rows
from tests.support.served import ServedCoordinator, emptied_replicas

WRITERS = 8
COMMITS = 25


@pytest.fixture
def two_services(pg_url: str, warehouse: Path, tmp_path: Path) -> Iterator[list[ServedCoordinator]]:
    with emptied_replicas(
        pg_url, warehouse, tmp_path, 2, COORDINATOR_LOCK_ACQUIRE_TIMEOUT_SECONDS="60"
    ) as started:
        yield started


@pytest.mark.slow
def test_two_processes_eight_writers(two_services: list[ServedCoordinator], warehouse: Path) -> None:
    first = two_services[0]
    created = httpx.post(
        f"{first.url}/tables",
        json={
            "database": "db",
            "name": "events",
            "fields": [{"name": "id", "type": "BIGINT"}, {"name": "w", "type": "INT"}],
        },
    )
    assert created.status_code == 201, created.text
    table = PaimonTable(created.json())
    results: list[tuple[int, int, CommitResponse]] = []
    errors: list[BaseException] = []
    guard = threading.Lock()

    def writer(n: int) -> None:
        # The real client: a lost answer (a keep-alive race under load) is resolved by asking for the
        # outcome, as a writer in production does, never by a blind resend.
        clients = [CoordinatorClient(s.url, timeout=120) for s in two_services]
        try:
            for k in range(1, COMMITS + 1):
                row = {"id": n * 1000 + k, "w": n}
                body = append_commit(table, [row], user=f"writer-{n}", identifier=k)
                response = clients[(n + k) % 2].commit(table.id, body)
                with guard:
                    results.append((n, k, response))
        except BaseException as e:  # surfaced below: a thread's failure must fail the test
            errors.append(e)
        finally:
            for c in clients:
                c.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted((n, k) for n, k, _ in results) == [
        (n, k) for n in range(WRITERS) for k in range(1, COMMITS + 1)
    ]
    assert all(len(r.snapshots) == 1 for _, _, r in results)
    ids = sorted(r.snapshots[0].id for _, _, r in results)
    assert ids == list(range(1, WRITERS * COMMITS + 1))
    snapshot_files = {p.name for p in (table.path / "snapshot").iterdir() if p.name.startswith("snapshot-")}
    assert snapshot_files == {f"snapshot-{i}" for i in ids}
    rows = pypaimon_rows(warehouse, table.id)
    assert sorted(r["id"] for r in rows) == sorted(
        n * 1000 + k for n in range(WRITERS) for k in range(1, COMMITS + 1)
    )
    history = httpx.get(f"{first.url}/tables/{table.id}/commits", params={"limit": 1000}).json()["commits"]
    assert len(history) == WRITERS * COMMITS
    assert {c["outcome"] for c in history} == {"committed"}
