"""Several service processes (replicas) on one PostgreSQL database and one warehouse.

Each replica caches tables and keeps in-memory state per table; none of it may outlive what the database
says the table is. Every test here starts real `coordinator serve` processes on a PostgreSQL database of
its own, created and dropped by the test. The last tests put one replica in this process, so that a
commit can be stalled at a chosen step (tests/support/pause.py) while another replica changes the table.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text

from coordinator.commit import commit_point as commit_records
from coordinator.commit.pipeline import Committer
from coordinator.db.migrate import alembic_config
from coordinator.errors import InvalidRequest
from coordinator.services import Services
from coordinator.settings import Settings
from coordinator_client.models import CommitRequest
from tests.support.commits import append_commit, post_commit
from tests.support.databases import postgres_database
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows, sorted_rows
from tests.support.pause import PausedCall
from tests.support.served import ServedCoordinator

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

"""The `coordinator` command of the venv running the tests."""

REPLICA_ENV = {"COORDINATOR_LOCK_ACQUIRE_TIMEOUT_SECONDS": "60", "COORDINATOR_LOG_FORMAT": "text"}

TABLE = "sales.events"
FIELDS = {"dt": "STRING", "region": "STRING", "id": "BIGINT"}


@pytest.fixture
def empty_pg() -> Iterator[str]:
    """A new, empty PostgreSQL database (not migrated), dropped at the end."""
    with postgres_database("coordinator_replicas") as url:
        yield url


@pytest.fixture
def start_replica(empty_pg: str, warehouse: Path, tmp_path: Path) -> Iterator[Any]:
    """Starts replicas on the test's database and warehouse (not waiting for them); stops them at the end."""
    started: list[ServedCoordinator] = []

    def start() -> ServedCoordinator:
        replica = ServedCoordinator(
            empty_pg, warehouse, tmp_path / f"replica-{len(started)}.log", env=REPLICA_ENV
        )
        started.append(replica)
        return replica

    yield start
    for replica in started:
        replica.stop()


def two_replicas(start_replica: Any) -> tuple[ServedCoordinator, ServedCoordinator]:
    a = start_replica()
    a.wait_healthy()  # migrates the empty database
    b = start_replica()
    b.wait_healthy()
    return a, b


def create_events(http: httpx.Client, partition_key: str, **body: Any) -> PaimonTable:
    database, name = TABLE.split(".")
    return create_table(http, database, name, FIELDS, partitionKeys=[partition_key], **body)


def commit_on(replica: ServedCoordinator, table: PaimonTable, rows: list[dict[str, Any]]) -> httpx.Response:
    """POST a commit of one new data file holding `rows` (one partition) to `replica`."""
    return post_commit(replica.http, table, append_commit(table, rows))


def live_file_names(replica: ServedCoordinator) -> list[str]:
    response = replica.http.get(f"/tables/{TABLE}/files")
    assert response.status_code == 200, response.text
    return sorted(f["fileName"] for f in response.json()["files"])


def recreate_by_region(a: ServedCoordinator) -> PaimonTable:
    """Drop the table on replica A and create it again there, partitioned by region instead of dt."""
    assert a.http.delete(f"/tables/{TABLE}", params={"purge": "true"}).status_code == 204
    return create_events(a.http, "region")


def test_a_table_recreated_on_one_replica_is_committed_to_in_its_new_shape_on_another(
    start_replica: Any, warehouse: Path
) -> None:
    a, b = two_replicas(start_replica)
    by_dt = create_events(a.http, "dt")
    first = commit_on(b, by_dt, [{"dt": "2024-01-01", "region": "eu", "id": 1}])
    assert first.status_code == 201, first.text  # B has the table (by dt) cached now
    assert live_file_names(b)  # and has read it

    by_region = recreate_by_region(a)

    old = commit_on(b, by_dt, [{"dt": "2024-01-02", "region": "us", "id": 2}])
    assert old.status_code == 422, old.text
    assert old.json()["field"] == "messages[0].partition.dt"
    new_rows = [{"dt": "2024-01-03", "region": "ap", "id": 3}]
    new = commit_on(b, by_region, new_rows)
    assert new.status_code == 201, new.text
    assert [s["id"] for s in new.json()["snapshots"]] == [1]

    new_file = next(iter((by_region.path / "region=ap" / "bucket-0").iterdir())).name
    assert live_file_names(a) == live_file_names(b) == [new_file]
    assert pypaimon_rows(warehouse, TABLE) == sorted_rows(new_rows)
    described = b.http.get(f"/tables/{TABLE}").json()
    assert described["schema"]["partitionKeys"] == ["region"]


def test_options_changed_on_one_replica_rule_the_next_commit_on_another(
    start_replica: Any, warehouse: Path
) -> None:
    a, b = two_replicas(start_replica)
    table = create_events(a.http, "dt")
    everything: list[dict[str, Any]] = []
    for i in range(1, 4):
        rows = [{"dt": "2024-01-01", "region": "eu", "id": i}]
        assert commit_on(b, table, rows).status_code == 201
        everything += rows
    snapshots = table.snapshot_dir
    assert sorted(p.name for p in snapshots.glob("snapshot-*")) == [f"snapshot-{i}" for i in (1, 2, 3)]

    patched = a.http.patch(
        f"/tables/{TABLE}/options",
        json={"set": {"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"}},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["schema"]["id"] == 1

    rows = [{"dt": "2024-01-01", "region": "eu", "id": 4}]
    assert commit_on(b, table, rows).status_code == 201
    everything += rows
    # B expired after its commit as the new options say (sync, the default): two snapshots are left.
    assert sorted(p.name for p in snapshots.glob("snapshot-*")) == ["snapshot-3", "snapshot-4"]
    assert pypaimon_rows(warehouse, TABLE) == sorted_rows(everything)
    assert b.http.get(f"/tables/{TABLE}/snapshots/2").status_code == 404


def test_replicas_started_together_on_an_empty_database_migrate_it_once(
    start_replica: Any, empty_pg: str
) -> None:
    replicas = [start_replica() for _ in range(3)]
    for replica in replicas:
        replica.wait_healthy()
    engine = create_engine(empty_pg)
    try:
        with engine.connect() as conn:
            versions = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    finally:
        engine.dispose()
    heads = ScriptDirectory.from_config(alembic_config(empty_pg)).get_heads()
    assert len(heads) == 1
    assert versions == heads
    # Each one serves: a table created through one is seen by the others.
    create_events(replicas[0].http, "dt")
    for replica in replicas:
        assert replica.http.get(f"/tables/{TABLE}").status_code == 200


# One replica in this process: a commit stalled at a chosen step while replica A changes the table.


@pytest.fixture
def local_replica(
    empty_pg: str, warehouse: Path, start_replica: Any
) -> Iterator[tuple[ServedCoordinator, Services]]:
    """Replica A in a process of its own (it migrates the database), replica B's use cases in this one."""
    a = start_replica()
    a.wait_healthy()
    settings = Settings(
        database_url=empty_pg,
        warehouse=str(warehouse),
        auto_migrate=False,
        lock_lease_seconds=5,
        lock_acquire_timeout_seconds=20,
    )
    b = Services.start(settings)
    try:
        yield a, b
    finally:
        b.close()


def stalled_commit(services: Services, table: PaimonTable, rows: list[dict[str, Any]], *, at: Any) -> Any:
    """B's commit of `rows`, resolved against the table B has now, held at the first call of `at`."""
    request = CommitRequest.model_validate(append_commit(table, rows))
    return PausedCall(lambda: services.committer.commit(TABLE, request), at=at).start()


def test_a_commit_waiting_for_the_lock_while_the_table_is_recreated_is_judged_by_the_new_table(
    local_replica: tuple[ServedCoordinator, Services], warehouse: Path
) -> None:
    a, b = local_replica
    by_dt = create_events(a.http, "dt")
    # Resolved against the table by dt, then held before it takes the table's lock.
    old_rows = [{"dt": "2024-01-02", "region": "us", "id": 2}]
    waiting = stalled_commit(b, by_dt, old_rows, at=Committer._lead)
    by_region = recreate_by_region(a)
    with pytest.raises(InvalidRequest) as rejected:
        waiting.resume()
    assert rejected.value.field == "messages[0].partition.dt"

    new_rows = [{"dt": "x", "region": "eu", "id": 1}]
    answer = b.committer.commit(TABLE, CommitRequest.model_validate(append_commit(by_region, new_rows)))
    assert [s.id for s in answer.snapshots] == [1]
    assert pypaimon_rows(warehouse, TABLE) == new_rows


def test_a_table_recreated_just_before_the_commit_point_gets_nothing_of_the_old_one(
    local_replica: tuple[ServedCoordinator, Services], warehouse: Path
) -> None:
    a, b = local_replica
    by_dt = create_events(a.http, "dt")
    # Decided against the table by dt under its lock, then held just before the commit point.
    old_rows = [{"dt": "2024-01-02", "region": "us", "id": 2}]
    waiting = stalled_commit(b, by_dt, old_rows, at=commit_records.commit_each)
    recreated = threading.Event()

    def recreate() -> None:
        recreate_by_region(a)
        recreated.set()

    # Today a drop takes no table lock, so replica A replaces the table while B holds the lock.
    worker = threading.Thread(target=recreate)
    worker.start()
    assert recreated.wait(30), "dropping the table waited for the table lock B holds"
    worker.join()
    with pytest.raises(InvalidRequest) as rejected:
        waiting.resume()
    assert rejected.value.field == "messages[0].partition.dt"
    assert a.http.get(f"/tables/{TABLE}/snapshots").json()["snapshots"] == []
    assert pypaimon_rows(warehouse, TABLE) == []
