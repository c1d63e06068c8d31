"""Big deltas go into the live-file index in bulk (COPY on PostgreSQL) with the upsert's meaning: a
re-added file revives its removed row, and a whole batch lands or none of it."""

from __future__ import annotations

from sqlalchemy import text

from coordinator.db.engine import read_only
from coordinator.db.repositories import live_files as index
from coordinator.services import Services
from coordinator_client.models import CreateTableRequest, FieldSpec
from paimon_format.manifest import DataFileMeta, FileKind, ManifestEntry, SimpleStats

MANY = index.COPY_FROM * 2


def _entries(kind: FileKind, names: list[str]) -> list[ManifestEntry]:
    empty = SimpleStats.EMPTY
    return [
        ManifestEntry(
            kind,
            empty.min_values,
            0,
            -1,
            DataFileMeta(name, 100 + i, 10, empty.min_values, empty.max_values, empty, empty, 0, 9, 0, 0),
        )
        for i, name in enumerate(names)
    ]


def _rows(services: Services, table_id: str) -> dict[str, tuple[int | None, int | None]]:
    with read_only(services.engine) as conn:
        query = text("SELECT file_name, added_in, removed_in FROM live_files WHERE table_id = :t")
        rows = conn.execute(query, {"t": table_id})
        return {name: (added, removed) for name, added, removed in rows}


def test_big_deltas_add_remove_and_revive_rows(services: Services) -> None:
    table = services.tables.create(
        CreateTableRequest(database="db", name="t", fields=[FieldSpec(name="id", type="BIGINT")])
    )
    names = [f"data-{i}.parquet" for i in range(MANY)]
    with services.engine.begin() as conn:
        index.apply_delta(conn, table.id, 1, _entries(FileKind.ADD, names), forget_before=0)
    assert _rows(services, table.id) == dict.fromkeys(names, (1, None))
    with read_only(services.engine) as conn:
        found = index.find_files(conn, table.id, {index.file_key(e) for e in _entries(FileKind.ADD, names)})
    assert sorted(f.entry.file.file_name for f in found) == sorted(names)
    assert {f.entry for f in found} == set(_entries(FileKind.ADD, names))

    with services.engine.begin() as conn:
        index.apply_delta(conn, table.id, 2, _entries(FileKind.DELETE, names[:10]), forget_before=0)
    # Re-added under their old identity, beside new files: the removed rows live again.
    again = names[:10] + [f"new-{i}.parquet" for i in range(MANY)]
    with services.engine.begin() as conn:
        index.apply_delta(conn, table.id, 3, _entries(FileKind.ADD, again), forget_before=0)
    expected = {**dict.fromkeys(names, (1, None)), **dict.fromkeys(again, (3, None))}
    assert _rows(services, table.id) == expected


def test_a_failed_transaction_leaves_no_bulk_rows(services: Services) -> None:
    table = services.tables.create(
        CreateTableRequest(database="db", name="t", fields=[FieldSpec(name="id", type="BIGINT")])
    )
    names = [f"data-{i}.parquet" for i in range(MANY)]
    try:
        with services.engine.begin() as conn:
            index.apply_delta(conn, table.id, 1, _entries(FileKind.ADD, names), forget_before=0)
            raise RuntimeError("the commit point failed after the index moved")
    except RuntimeError:
        pass
    assert _rows(services, table.id) == {}
