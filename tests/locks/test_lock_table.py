"""What only the lock table promises (exact epochs, the database clock) and the commit path's fencing.

The behaviour every lock backend shares is in test_contract.py.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from coordinator.commit.commit_point import commit_each
from coordinator.errors import CommitConflict
from coordinator.locks.lock_table import LockTable
from coordinator.services import Services
from coordinator.settings import Settings
from coordinator.usecases.table_hold import Hold
from coordinator_client.models import CommitRequest, CreateTableRequest, FieldSpec
from tests.support.commits import append_commit
from tests.support.paimon_files import PaimonTable, pypaimon_rows
from tests.support.pause import PausedCall
from tests.support.waiting import wait_for


@pytest.fixture
def lock_table(database_url: str) -> Any:
    engine = create_engine(database_url)
    yield LockTable(engine, lease_seconds=0.5)
    engine.dispose()


def test_epochs_count_every_acquisition_and_forced_release(lock_table: LockTable) -> None:
    first = lock_table.acquire("t", "a", timeout_seconds=1)
    assert first.epoch == 1
    lock_table.release(first)
    second = lock_table.acquire("t", "b", timeout_seconds=1)
    assert second.epoch == 2
    time.sleep(0.6)
    assert lock_table.acquire("t", "c", timeout_seconds=1).epoch == 3  # took the expired lease over
    lock_table.force_release("t")  # moves the epoch on at once, so the fenced holder's epoch is gone
    assert lock_table.acquire("t", "d", timeout_seconds=1).epoch == 5


def test_the_lease_is_measured_on_the_database_clock(lock_table: LockTable) -> None:
    before = lock_table.now_ms()
    lock_table.acquire("t", "a", timeout_seconds=1)
    after = lock_table.now_ms()
    [held] = lock_table.held()
    assert before <= held.acquired_at_ms <= after
    assert held.expires_at_ms - held.acquired_at_ms == 500


def _commit(table: PaimonTable, rows: list[dict[str, Any]], user: str) -> CommitRequest:
    return CommitRequest.model_validate(append_commit(table, rows, user=user))


def test_holder_resuming_after_its_lease_cannot_commit(settings: Settings, warehouse: Path) -> None:
    services = Services.start(settings)
    # A second replica on the same database and warehouse plays the holder that stalls.
    zombie_replica = Services.start(settings)
    try:
        created = services.tables.create(
            CreateTableRequest(
                database="db",
                name="t",
                fields=[FieldSpec(name="id", type="BIGINT"), FieldSpec(name="v", type="STRING")],
            ),
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
        manifest_dir = table.path / "manifest"
        # The zombie takes the lock, writes its manifests, then stalls (a GC pause, a frozen VM) just
        # before its commit point, and its lease is taken from it.
        zombie = PausedCall(
            lambda: zombie_replica.committer.commit(
                table.id, _commit(table, [{"id": 2, "v": "zombie"}], "z")
            ),
            at=commit_each,
        ).start()
        [held] = services.locks.held()
        assert services.locks.force_release(created.lock_id) == held
        at_pause = set(manifest_dir.iterdir())
        winner = services.committer.commit(table.id, _commit(table, [{"id": 1, "v": "winner"}], "writer"))
        assert [s.id for s in winner.snapshots] == [1]
        winners_manifests = set(manifest_dir.iterdir()) - at_pause
        with pytest.raises(CommitConflict) as fenced:
            zombie.resume()
        assert fenced.value.conflict.type == "LOCK_LOST"
        assert fenced.value.conflict.retryable is True
        assert not (table.path / "snapshot" / "snapshot-2").exists()
        # The zombie's manifests are gone; the winner's stay.
        assert set(manifest_dir.iterdir()) == winners_manifests
        assert pypaimon_rows(warehouse, table.id) == [{"id": 1, "v": "winner"}]
        # The service goes on: the next commit builds on snapshot 1.
        after = services.committer.commit(table.id, _commit(table, [{"id": 3, "v": "next"}], "writer-2"))
        assert [s.id for s in after.snapshots] == [2]
    finally:
        zombie_replica.close()
        services.close()


def test_a_holder_that_saw_its_lease_lost_writes_nothing(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """The lease keeper's renewal finds the lease gone: the commit stops before writing any manifest."""
    services = Services.start(settings.model_copy(update={"lock_lease_seconds": 0.6}))
    try:
        created = services.tables.create(
            CreateTableRequest(database="db", name="t", fields=[FieldSpec(name="id", type="BIGINT")])
        )
        table = PaimonTable(
            {
                "id": created.id,
                "location": created.location,
                "schema": {
                    "fields": [{"name": "id", "type": "BIGINT"}],
                    "partitionKeys": [],
                    "primaryKeys": [],
                    "options": {},
                },
            }
        )
        late = _commit(table, [{"id": 1}], "late")
        holder = PausedCall(lambda: services.committer.commit(table.id, late), at=Hold.check_alive).start()
        assert services.locks.force_release(created.lock_id) is not None
        # The keeper's next renewal (every 0.2 s) finds it.
        wait_for(lambda: "was lost" in caplog.text, "the lease keeper to notice", seconds=10)
        with pytest.raises(CommitConflict) as fenced:
            holder.resume()
        assert (fenced.value.conflict.type, fenced.value.conflict.retryable) == ("LOCK_LOST", True)
        assert not (table.path / "manifest").exists() or not any((table.path / "manifest").iterdir())
        assert services.tables.latest_snapshot_id(table.id) == 0
    finally:
        services.close()
