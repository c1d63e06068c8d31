"""The live-file index (usecases/live_index.py) against the manifests it stands for.

After every kind of change (appends, a compaction, an overwrite, a snapshot adopted from a writer outside
the coordinator, a rollback) the index lists exactly the live files a manifest scan of the latest
snapshot finds; a restarted service commits an append without opening a single manifest; a table the
index has never seen is indexed by its next commit.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, delete

from coordinator.app import create_app
from coordinator.db.engine import read_only
from coordinator.db.models import LiveFileRow, LiveIndexRow
from coordinator.db.repositories import live_files as index
from coordinator.services import Services
from coordinator.settings import Settings
from tests.support.commits import commit
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows, sorted_rows

FIELDS = {"dt": "STRING", "id": "BIGINT"}

FileKey = tuple[bytes, int, int, str]


def _indexed(services: Services, table_id: str) -> set[FileKey]:
    with read_only(services.engine) as conn:
        return {index.file_key(f.entry) for f in index.partition_files(conn, table_id, None)}


def _scanned(services: Services, table_id: str) -> set[FileKey]:
    _, entries = services.reads.live_entries(table_id, None)
    return {index.file_key(e) for e in entries}


def _index_snapshot(services: Services, table_id: str) -> int | None:
    with read_only(services.engine) as conn:
        return index.index_snapshot(conn, table_id)


def _append(api: TestClient, table: PaimonTable, *ids: int, dt: str = "a") -> list[dict[str, Any]]:
    files = [table.append_file([{"dt": dt, "id": i}]) for i in ids]
    commit(api, table, [table.message({"dt": dt, "id": ids[0]}, newFiles=files)])
    return files


def _matches_scan(api: TestClient, table: PaimonTable) -> set[FileKey]:
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    latest = services.tables.latest_snapshot_id(table.id)
    assert _index_snapshot(services, table.id) == latest
    indexed = _indexed(services, table.id)
    assert indexed == _scanned(services, table.id)
    return indexed


def _outside_commit(warehouse: Path, table: PaimonTable, row: dict[str, Any]) -> None:
    from pypaimon import CatalogFactory

    outside = CatalogFactory.create({"warehouse": str(warehouse)}).get_table(table.id)
    builder = outside.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(
        pa.Table.from_pylist([row], schema=pa.schema([("dt", pa.string()), ("id", pa.int64())]))
    )
    builder.new_commit().commit(write.prepare_commit())
    write.close()


def test_the_index_follows_every_kind_of_change(api: TestClient, warehouse: Path) -> None:
    table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
    a = _append(api, table, 1, 2, 3)
    _append(api, table, 4, dt="b")
    assert len(_matches_scan(api, table)) == 4

    # A compaction: three files of partition a become one.
    merged = table.append_file([{"dt": "a", "id": i} for i in (1, 2, 3)])
    compaction = table.message({"dt": "a", "id": 1}, compactBefore=a, compactAfter=[merged])
    commit(api, table, [compaction])
    assert len(_matches_scan(api, table)) == 2

    # An overwrite of partition b.
    replacement = table.append_file([{"dt": "b", "id": 40}])
    commit(
        api,
        table,
        [table.message({"dt": "b", "id": 40}, newFiles=[replacement])],
        overwrite={"mode": "static", "partition": {"dt": "b"}},
    )
    assert len(_matches_scan(api, table)) == 2

    # A snapshot written by pypaimon outside the coordinator is adopted by the next commit.
    _outside_commit(warehouse, table, {"dt": "c", "id": 50})
    _append(api, table, 60, dt="c")
    assert len(_matches_scan(api, table)) == 4

    # A rollback to snapshot 2 (before the compaction); the next commit indexes the table afresh.
    response = api.post(f"/tables/{table.id}/rollback", json={"snapshotId": 2})
    assert response.status_code == 200, response.text
    _append(api, table, 70, dt="d")
    assert len(_matches_scan(api, table)) == 5
    assert pypaimon_rows(warehouse, table.id) == sorted_rows(
        [{"dt": "a", "id": i} for i in (1, 2, 3)] + [{"dt": "b", "id": 4}, {"dt": "d", "id": 70}]
    )


def test_a_restarted_service_commits_an_append_without_opening_a_manifest(
    settings: Settings, warehouse: Path
) -> None:
    # Every manifest reaches this target size, so none is small and no merge needs to open one.
    options = {"manifest.target-file-size": "1 b"}
    with TestClient(create_app(settings)) as api:
        table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"], options=options)
        for start in range(0, 15, 5):
            _append(api, table, *range(start, start + 5), dt=f"d{start}")
    # The manifests (not the manifest lists) move away while the restarted service commits.
    manifests = [p for p in table.manifest_dir.iterdir() if not p.name.startswith("manifest-list-")]
    assert len(manifests) >= 3
    aside = warehouse.parent / "aside"
    aside.mkdir()
    for path in manifests:
        shutil.move(path, aside / path.name)
    with TestClient(create_app(settings)) as api:
        _append(api, table, 100, dt="new")
        indexed = _indexed(api.app.state.services, table.id)
    for path in aside.iterdir():
        shutil.move(path, table.manifest_dir / path.name)
    assert len(indexed) == 16
    expected = [{"dt": f"d{s}", "id": i} for s in range(0, 15, 5) for i in range(s, s + 5)]
    assert pypaimon_rows(warehouse, table.id) == sorted_rows([*expected, {"dt": "new", "id": 100}])


def test_a_table_the_index_has_not_seen_is_indexed_by_its_next_commit(
    settings: Settings, warehouse: Path
) -> None:
    with TestClient(create_app(settings)) as api:
        table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
        _append(api, table, 1, 2)
        _append(api, table, 3, dt="b")
    # As a table committed before the index existed: no index row, no file rows.
    engine = create_engine(settings.database_url)
    with engine.begin() as conn:
        conn.execute(delete(LiveFileRow).where(LiveFileRow.table_id == table.id))
        conn.execute(delete(LiveIndexRow).where(LiveIndexRow.table_id == table.id))
    engine.dispose()
    with TestClient(create_app(settings)) as api:
        services: Services = api.app.state.services
        assert _index_snapshot(services, table.id) is None
        sequences = api.get(f"/tables/{table.id}/sequence-numbers")
        assert sequences.status_code == 200, sequences.text  # answered from manifests meanwhile
        _append(api, table, 4, dt="c")
        assert len(_matches_scan(api, table)) == 4
