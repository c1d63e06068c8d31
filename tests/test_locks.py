"""The lock table's contract on SQLite and PostgreSQL: exclusion, leases, renewal, fencing, crashes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from coordinator.errors import CommitConflict, LockUnavailable
from coordinator.locks.lock_table import LockTable
from coordinator.locks.renewal import LeaseKeeper
from coordinator.services import Services
from coordinator.settings import Settings
from coordinator_client.models import CommitRequest, CreateTableRequest, FieldSpec
from tests.paimon_files import PaimonTable, pypaimon_rows


@pytest.fixture
def lock_table(database_url: str) -> Any:
    engine = create_engine(database_url)
    yield LockTable(engine, lease_seconds=0.5)
    engine.dispose()


def test_exclusive_then_released(lock_table: LockTable) -> None:
    lease = lock_table.acquire("t", "a", timeout_seconds=1)
    assert lease.epoch == 1
    started = time.monotonic()
    with pytest.raises(LockUnavailable) as waited:
        lock_table.acquire("t", "b", timeout_seconds=0.2)
    assert time.monotonic() - started >= 0.2
    assert waited.value.retry_after_seconds >= 1
    [held] = lock_table.held()
    assert (held.lock_id, held.owner, held.epoch) == ("t", "a", 1)
    assert held.expires_at_ms - held.acquired_at_ms == 500
    lock_table.release(lease)
    assert lock_table.held() == []
    assert lock_table.acquire("t", "b", timeout_seconds=1).epoch == 2


def test_release_is_owner_checked(lock_table: LockTable) -> None:
    lease = lock_table.acquire("t", "a", timeout_seconds=1)
    lock_table.release(type(lease)("t", "intruder", lease.epoch))
    lock_table.release(type(lease)("t", "a", lease.epoch + 7))
    assert [h.owner for h in lock_table.held()] == ["a"]


def test_expired_lease_is_taken_over_and_the_old_holder_is_fenced(lock_table: LockTable) -> None:
    old = lock_table.acquire("t", "a", timeout_seconds=1)
    time.sleep(0.6)
    new = lock_table.acquire("t", "b", timeout_seconds=1)
    assert new.epoch == old.epoch + 1
    assert lock_table.renew(old) is False
    lock_table.release(old)  # a late release must not free the new holder's lock
    assert [(h.owner, h.epoch) for h in lock_table.held()] == [("b", new.epoch)]


def test_renewal_keeps_a_long_holder(lock_table: LockTable) -> None:
    lease = lock_table.acquire("t", "a", timeout_seconds=1)
    with LeaseKeeper(lock_table, lease, 0.5) as keeper:
        time.sleep(1.2)
        with pytest.raises(LockUnavailable):
            lock_table.acquire("t", "b", timeout_seconds=0.1)
    assert keeper.lost is False


def test_mutual_exclusion_under_contention(lock_table: LockTable) -> None:
    inside = 0
    most = 0
    entries = 0
    guard = threading.Lock()

    def worker(n: int) -> None:
        nonlocal inside, most, entries
        for _ in range(10):
            lease = lock_table.acquire("hot", f"w{n}", timeout_seconds=30)
            with guard:
                inside += 1
                most = max(most, inside)
                entries += 1
            time.sleep(0.002)
            with guard:
                inside -= 1
            lock_table.release(lease)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert entries == 60
    assert most == 1
    assert lock_table.acquire("hot", "last", timeout_seconds=1).epoch == 61


HOLDER = """
import sys, time
from sqlalchemy import create_engine
from coordinator.locks.lock_table import LockTable
LockTable(create_engine(sys.argv[1]), lease_seconds=1.0).acquire("table:x", "doomed", timeout_seconds=5)
print("held", flush=True)
time.sleep(600)
"""


def test_killed_holder_loses_the_lock_after_its_lease(database_url: str, lock_table: LockTable) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, database_url], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    ) as holder:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        killed_at = time.monotonic()
        lease = lock_table.acquire("table:x", "next", timeout_seconds=5)
        assert lease.epoch == 2
        # It could not have come earlier than the dead holder's lease (1 s, minus scheduling slack).
        assert time.monotonic() - killed_at > 0.5


def _commit(table: PaimonTable, rows: list[dict[str, Any]], user: str) -> CommitRequest:
    return CommitRequest.model_validate(
        {"commitUser": user, "messages": [table.message(rows[0], newFiles=[table.append_file(rows)])]}
    )


def test_holder_resuming_after_its_lease_cannot_commit(settings: Settings, warehouse: Path) -> None:
    services = Services.start(settings.model_copy(update={"lock_lease_seconds": 0.4}))
    try:
        created = services.tables.create(
            CreateTableRequest(
                database="db",
                name="t",
                fields=[FieldSpec(name="id", type="BIGINT"), FieldSpec(name="v", type="STRING")],
            ),
            now_millis=0,
        )
        table = PaimonTable(
            {
                "id": created.id,
                "location": created.location,
                "schema": {
                    "fields": [{"name": "id", "type": "BIGINT"}, {"name": "v", "type": "STRING"}],
                    "partitionKeys": [],
                    "primaryKeys": [],
                    "options": {},
                },
            }
        )
        # The zombie takes the lock, then stalls (a GC pause, a frozen VM) past its lease.
        zombie = services.locks.acquire(created.lock_id, f"zombie-{uuid.uuid4()}", timeout_seconds=1)
        time.sleep(0.6)
        winner = services.committer.commit(table.id, _commit(table, [{"id": 1, "v": "winner"}], "writer"))
        assert [s.id for s in winner.snapshots] == [1]
        manifests_before = sorted((table.location / "manifest").iterdir())
        with pytest.raises(CommitConflict) as fenced:
            services.committer.commit_holding(
                zombie, table.id, _commit(table, [{"id": 2, "v": "zombie"}], "z")
            )
        assert fenced.value.conflict.type == "LOCK_LOST"
        assert fenced.value.conflict.retryable is True
        assert not (table.location / "snapshot" / "snapshot-2").exists()
        assert sorted((table.location / "manifest").iterdir()) == manifests_before
        assert pypaimon_rows(warehouse, table.id) == [{"id": 1, "v": "winner"}]
        # The service goes on: the next commit builds on snapshot 1.
        after = services.committer.commit(table.id, _commit(table, [{"id": 3, "v": "next"}], "writer-2"))
        assert [s.id for s in after.snapshots] == [2]
    finally:
        services.close()
