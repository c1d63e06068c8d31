"""The live-file index's probes at the start of a commit plan index scans without a SET LOCAL of their
own: the probe engine's sessions come with sequential scans off (db.engine.probe_engine)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, text

from coordinator.db.engine import probe_engine, read_only
from coordinator.db.migrate import upgrade
from coordinator.db.repositories import live_files as index
from paimon_format.manifest import DataFileMeta, FileKind, ManifestEntry, SimpleStats
from tests.support.databases import postgres_database

pytestmark = pytest.mark.postgres


@pytest.fixture
def engine() -> Iterator[Engine]:
    """A database of its own: its live_files table is new and never analyzed, as on a fresh install."""
    with postgres_database("coordinator_probes") as url:
        upgrade(url)
        engine = create_engine(url)
        yield engine
        engine.dispose()


def _entry(name: str) -> ManifestEntry:
    empty = SimpleStats.EMPTY
    meta = DataFileMeta(name, 100, 10, empty.min_values, empty.max_values, empty, empty, 0, 9, 0, 0)
    return ManifestEntry(FileKind.ADD, empty.min_values, 0, -1, meta)


def _plan(engine: Engine, names: list[str]) -> str:
    with read_only(engine) as conn:
        rows = conn.execute(
            text(f"EXPLAIN {index._BY_NAME_LATERAL.text}"), {"names": "/".join(names), "table_id": "db.t"}
        )
        return "\n".join(row[0] for row in rows)


def test_a_probe_finds_its_files_by_the_index_in_one_autocommit_statement(engine: Engine) -> None:
    names = [f"data-{i}.parquet" for i in range(3 * index.COPY_FROM)]
    with engine.begin() as conn:
        index.apply_delta(conn, "db.t", 1, [_entry(n) for n in names], forget_before=None)
    probes = probe_engine(engine)
    try:
        with read_only(probes) as conn:
            assert conn.execute(text("SHOW enable_seqscan")).scalar() == "off"
            found = index.find_files(conn, "db.t", {index.file_key(_entry(n)) for n in names[:5]})
        assert sorted(f.entry.file.file_name for f in found) == names[:5]
        plan = _plan(probes, names[:5])
        assert "Index" in plan, plan
        assert "Seq Scan on live_files" not in plan, plan
    finally:
        probes.dispose()
    # The pool the rest of the service uses keeps the planner's defaults.
    with read_only(engine) as conn:
        assert conn.execute(text("SHOW enable_seqscan")).scalar() == "on"
