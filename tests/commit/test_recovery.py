"""Crash between the commit point and publishing, and snapshots published by writers outside the service."""

from __future__ import annotations

from typing import Any

import httpx
import pyarrow as pa
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, update

from coordinator.app import create_app
from coordinator.db.models import SnapshotRow
from coordinator.settings import Settings
from tests.support.commits import append_commit, post_commit
from tests.support.paimon_files import (
    PaimonTable,
    create_table,
    delete_file,
    pypaimon_catalog_options,
    pypaimon_rows,
    read_bytes,
    read_text,
    sorted_rows,
    write_bytes,
)

STORES = ("local", "s3")
FIELDS = {"dt": "STRING", "id": "BIGINT"}


def _commit(api: TestClient, table: PaimonTable, user: str, rows: list[dict[str, Any]]) -> httpx.Response:
    return post_commit(api, table, append_commit(table, rows, user=user))


def _crash_before_publish(settings: Settings, table: PaimonTable, snapshot_id: int) -> None:
    """Leave storage and database as a crash right after the commit point would."""
    delete_file(f"{table.location}/snapshot/snapshot-{snapshot_id}")
    latest = f"{table.location}/snapshot/LATEST"
    if snapshot_id > 1:
        write_bytes(latest, str(snapshot_id - 1).encode())
    else:
        delete_file(latest)
    engine = create_engine(settings.database_url)
    with engine.begin() as conn:
        conn.execute(
            update(SnapshotRow).where(SnapshotRow.snapshot_id == snapshot_id).values(published=False)
        )
    engine.dispose()


def test_next_commit_publishes_what_a_crash_left_behind(
    api: TestClient, settings: Settings, warehouse_location: str
) -> None:
    table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
    first = [{"dt": "a", "id": 1}]
    assert _commit(api, table, "j1", first).status_code == 201
    _crash_before_publish(settings, table, 1)
    assert pypaimon_rows(warehouse_location, table.id) == []  # committed in the database, not yet visible
    second = [{"dt": "b", "id": 2}]
    response = _commit(api, table, "j2", second)
    assert response.json()["snapshots"] == [{"id": 2, "commitKind": "APPEND"}]
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(first + second)
    assert read_text(f"{table.location}/snapshot/LATEST") == "2"


def test_start_up_publishes_what_a_crash_left_behind(settings: Settings, warehouse_location: str) -> None:
    with TestClient(create_app(settings)) as api:
        table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
        assert _commit(api, table, "j1", [{"dt": "a", "id": 1}]).status_code == 201
    _crash_before_publish(settings, table, 1)
    with TestClient(create_app(settings)):
        assert pypaimon_rows(warehouse_location, table.id) == [{"dt": "a", "id": 1}]


def test_snapshot_written_outside_the_service_is_adopted(api: TestClient, warehouse_location: str) -> None:
    from pypaimon import CatalogFactory

    table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
    assert _commit(api, table, "ours-1", [{"dt": "a", "id": 1}]).status_code == 201
    # pypaimon commits on its own, straight to storage, as a writer that bypasses the coordinator would.
    outside = CatalogFactory.create(pypaimon_catalog_options(warehouse_location)).get_table(table.id)
    builder = outside.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(
        pa.Table.from_pylist(
            [{"dt": "b", "id": 2}], schema=pa.schema([("dt", pa.string()), ("id", pa.int64())])
        )
    )
    builder.new_commit().commit(write.prepare_commit())
    write.close()
    snapshot_2 = read_bytes(f"{table.location}/snapshot/snapshot-2")

    response = _commit(api, table, "ours-2", [{"dt": "c", "id": 3}])
    assert response.json()["snapshots"] == [{"id": 3, "commitKind": "APPEND"}]
    assert read_bytes(f"{table.location}/snapshot/snapshot-2") == snapshot_2  # adopted, not overwritten
    adopted = api.get(f"/tables/{table.id}/snapshots/2").json()
    assert adopted["commitUser"] != "ours-1"
    assert adopted["commitKind"] == "APPEND"
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(
        [{"dt": "a", "id": 1}, {"dt": "b", "id": 2}, {"dt": "c", "id": 3}]
    )
    files = api.get(f"/tables/{table.id}/files").json()["files"]
    assert sorted(f["partition"]["dt"] for f in files) == ["a", "b", "c"]
