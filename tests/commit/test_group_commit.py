"""Group commit: commits that queue while the table lock is busy are decided together, one snapshot each.

Each test holds the table lock with an outside lease, queues commits from real threads (waiting until
the committer reports each one queued, so their order is known), then releases the lock and checks what
the one group did: dense snapshots in arrival order, one lock acquisition, a conflict that rejects only
its own commit, and a resend that is deduplicated instead of committed twice.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from coordinator.db.models import LockRow
from coordinator.errors import CommitConflict, LockUnavailable
from coordinator.services import Services
from coordinator_client.models import CommitRequest, CommitResponse
from tests.support.commits import append_commit
from tests.support.paimon_files import (
    PaimonTable,
    create_table,
    deletion_of,
    file_exists,
    file_names,
    pk_table,
    pypaimon_rows,
    read_text,
    rows_in_bucket,
    sorted_rows,
)

STORES = ("local", "s3")

QUEUE_DEADLINE_S = 20.0


class Queued:
    """Commits sent from threads in a known order while the test holds the table lock."""

    def __init__(self, services: Services, table: PaimonTable) -> None:
        self.services = services
        self.table = table
        self.results: dict[str, CommitResponse | BaseException] = {}
        self._threads: list[threading.Thread] = []

    def send(self, name: str, body: dict[str, Any], idempotency_key: str | None = None) -> None:
        """Start a thread committing `body` and return once it waits in the table's queue."""
        expected = self.services.queues.depth(self.table.id) + 1

        def run() -> None:
            try:
                self.results[name] = self.services.committer.commit(
                    self.table.id, CommitRequest.model_validate(body), idempotency_key=idempotency_key
                )
            except BaseException as error:  # inspected by the test
                self.results[name] = error

        thread = threading.Thread(target=run, name=f"commit-{name}")
        thread.start()
        self._threads.append(thread)
        deadline = time.monotonic() + QUEUE_DEADLINE_S
        while self.services.queues.depth(self.table.id) < expected:
            assert thread.is_alive(), f"commit {name} ended before queueing: {self.results.get(name)!r}"
            assert time.monotonic() < deadline, f"commit {name} never queued"
            time.sleep(0.005)

    def join(self) -> None:
        for thread in self._threads:
            thread.join(timeout=60)
            assert not thread.is_alive()

    def response(self, name: str) -> CommitResponse:
        result = self.results[name]
        assert isinstance(result, CommitResponse), f"{name}: {result!r}"
        return result

    def error(self, name: str) -> BaseException:
        result = self.results[name]
        assert isinstance(result, BaseException), f"{name} did not fail: {result!r}"
        return result


@pytest.fixture
def held(api: TestClient) -> tuple[Services, Any]:
    """The app's services, and a function that holds a table's lock with an outside lease."""
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    return (
        services,
        lambda table: services.locks.acquire(
            f"table:{table.id}", f"outside-{uuid.uuid4()}", timeout_seconds=5
        ),
    )


def append_body(table: PaimonTable, user: str, identifier: int, row: dict[str, Any]) -> dict[str, Any]:
    return append_commit(table, [row], user=user, identifier=identifier)


def lock_epoch(services: Services, table: PaimonTable) -> int:
    with services.engine.connect() as conn:
        return int(
            conn.execute(select(LockRow.epoch).where(LockRow.lock_id == f"table:{table.id}")).scalar_one()
        )


def snapshot_files(table: PaimonTable) -> list[str]:
    return [n for n in file_names(f"{table.location}/snapshot") if n.startswith("snapshot-")]


def manifest_files(table: PaimonTable) -> set[str]:
    return set(file_names(f"{table.location}/manifest"))


def test_waiting_commits_share_one_lock_hold(
    api: TestClient, held: tuple[Services, Any], warehouse_location: str
) -> None:
    services, hold = held
    table = create_table(api, "db", "events", {"id": "BIGINT", "w": "STRING"})
    outside = hold(table)
    queued = Queued(services, table)
    for n in range(6):
        queued.send(f"w{n}", append_body(table, f"writer-{n}", 1, {"id": n, "w": f"w{n}"}))
    services.locks.release(outside)
    queued.join()

    ids = [queued.response(f"w{n}").snapshots[0].id for n in range(6)]
    assert ids == [1, 2, 3, 4, 5, 6]  # dense, in arrival order
    assert {queued.response(f"w{n}").group_size for n in range(6)} == {6}
    assert lock_epoch(services, table) == outside.epoch + 1  # one acquisition for the six commits
    assert snapshot_files(table) == [f"snapshot-{i}" for i in range(1, 7)]
    assert read_text(f"{table.location}/snapshot/LATEST") == "6"
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(
        [{"id": n, "w": f"w{n}"} for n in range(6)]
    )
    history = api.get(f"/tables/{table.id}/commits").json()["commits"]
    assert sorted(c["commitUser"] for c in history if c["outcome"] == "committed") == [
        f"writer-{n}" for n in range(6)
    ]
    assert all("publish" in c["timings"] and "groupWait" in c["timings"] for c in history)


def test_a_conflict_rejects_only_its_own_commit_and_names_the_winner_from_the_group(
    api: TestClient, held: tuple[Services, Any], warehouse_location: str
) -> None:
    services, hold = held
    table = pk_table(api)
    rows = rows_in_bucket(table, 0, range(30))
    level0 = table.pk_file(rows, first_sequence=0)
    first = api.post(
        f"/tables/{table.id}/commits",
        json={
            "commitUser": "loader",
            "identifier": 1,
            "messages": [table.message(rows[0], newFiles=[level0])],
        },
    )
    assert first.status_code == 201
    manifests_before = manifest_files(table)
    outside = hold(table)
    queued = Queued(services, table)
    for name in ("compactor-1", "compactor-2"):
        after = table.pk_file(rows, first_sequence=0, level=5)
        compaction = table.message(rows[0], compactBefore=[deletion_of(level0)], compactAfter=[after])
        queued.send(name, {"commitUser": name, "identifier": 1, "messages": [compaction]})
    other = {"dt": "b", "id": 1, "v": "late"}
    queued.send(
        "appender",
        {
            "commitUser": "appender",
            "identifier": 1,
            "messages": [table.message(other, newFiles=[table.pk_file([other], first_sequence=100)])],
        },
    )
    services.locks.release(outside)
    queued.join()

    assert [s.id for s in queued.response("compactor-1").snapshots] == [2]
    assert [s.id for s in queued.response("appender").snapshots] == [3]
    assert queued.response("appender").group_size == 2
    rejected = queued.error("compactor-2")
    assert isinstance(rejected, CommitConflict)
    assert rejected.conflict.type == "DELETED_FILE_MISSING"
    assert rejected.conflict.files == [level0["fileName"]]
    # The winner was built in the same group, before the commit point: it is still named.
    assert rejected.conflict.winning_snapshot is not None
    assert (rejected.conflict.winning_snapshot.id, rejected.conflict.winning_snapshot.commit_user) == (
        2,
        "compactor-1",
    )
    assert snapshot_files(table) == ["snapshot-1", "snapshot-2", "snapshot-3"]
    # Two snapshots' manifests and lists were added; the rejected compaction's were deleted again.
    latest = api.get(f"/tables/{table.id}/snapshots/latest").json()
    referenced = {latest["baseManifestList"], latest["deltaManifestList"]}
    assert referenced <= manifest_files(table) - manifests_before
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows([*rows, other])
    outcomes = {
        c["commitUser"]: c["outcome"] for c in api.get(f"/tables/{table.id}/commits").json()["commits"]
    }
    assert outcomes == {
        "loader": "committed",
        "compactor-1": "committed",
        "compactor-2": "rejected",
        "appender": "committed",
    }


def test_a_commit_rejected_half_way_leaves_the_rest_of_the_group_on_a_rebuilt_state(
    api: TestClient, held: tuple[Services, Any], warehouse_location: str
) -> None:
    """Its APPEND snapshot was built before its COMPACT part conflicted: the in-memory state already
    held it, so the commits after it wait for the next group, built on what was really committed."""
    services, hold = held
    table = create_table(api, "db", "events", {"id": "BIGINT", "w": "STRING"})
    outside = hold(table)
    queued = Queued(services, table)
    queued.send("before", append_body(table, "before", 1, {"id": 1, "w": "before"}))
    row = {"id": 2, "w": "half"}
    never_committed = {"fileName": "data-never-committed-0.parquet", "fileSize": 10, "rowCount": 1}
    queued.send(
        "half",
        {
            "commitUser": "half",
            "identifier": 1,
            "messages": [
                table.message(
                    row,
                    newFiles=[table.append_file([row])],
                    compactBefore=[never_committed],
                    compactAfter=[table.append_file([row])],
                )
            ],
        },
    )
    queued.send("after", append_body(table, "after", 1, {"id": 3, "w": "after"}))
    services.locks.release(outside)
    queued.join()

    assert [s.id for s in queued.response("before").snapshots] == [1]
    rejected = queued.error("half")
    assert isinstance(rejected, CommitConflict)
    assert rejected.conflict.type == "DELETED_FILE_MISSING"
    assert [s.id for s in queued.response("after").snapshots] == [2]
    assert queued.response("after").group_size == 1  # decided by the next group
    assert snapshot_files(table) == ["snapshot-1", "snapshot-2"]
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(
        [{"id": 1, "w": "before"}, {"id": 3, "w": "after"}]
    )


def test_a_resend_in_the_same_group_is_deduplicated(api: TestClient, held: tuple[Services, Any]) -> None:
    services, hold = held
    table = create_table(api, "db", "events", {"id": "BIGINT", "w": "STRING"})
    outside = hold(table)
    queued = Queued(services, table)
    body = append_body(table, "writer", 7, {"id": 1, "w": "once"})
    queued.send("original", body)
    queued.send("resend", body)
    services.locks.release(outside)
    queued.join()

    original, resend = queued.response("original"), queued.response("resend")
    assert (original.deduplicated, resend.deduplicated) == (False, True)
    assert [s.id for s in resend.snapshots] == [s.id for s in original.snapshots] == [1]
    assert snapshot_files(table) == ["snapshot-1"]


def test_a_lock_busy_past_the_timeout_answers_every_waiting_commit(settings: Any) -> None:
    from coordinator.app import create_app

    impatient = settings.model_copy(update={"lock_acquire_timeout_seconds": 0.5})
    with TestClient(create_app(impatient)) as api:
        services: Services = api.app.state.services
        table = create_table(api, "db", "events", {"id": "BIGINT", "w": "STRING"})
        outside = services.locks.acquire(f"table:{table.id}", "long-compaction", timeout_seconds=5)
        queued = Queued(services, table)
        for n in range(3):
            queued.send(f"w{n}", append_body(table, f"writer-{n}", 1, {"id": n, "w": "x"}))
        queued.join()
        assert all(isinstance(queued.error(f"w{n}"), LockUnavailable) for n in range(3))
        assert not file_exists(f"{table.location}/snapshot/snapshot-1")
        services.locks.release(outside)
