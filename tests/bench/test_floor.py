"""The benchmark's floor (bench/floor.py) measures what a commit really does: the files it writes are a
readable Paimon snapshot with its manifests, and its transaction moves a head row once per commit and
leaves no scratch table behind."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, inspect

from bench import floor
from paimon_format.manifest import decode_manifest, decode_manifest_list
from paimon_format.snapshot import Snapshot, parse_hint


def test_the_floor_writes_a_commits_files(tmp_path: Path) -> None:
    summary = floor.files_ms(tmp_path / "t", 3, repeats=2)
    assert summary["n"] == 2
    latest = parse_hint((tmp_path / "t" / "snapshot" / "LATEST").read_bytes())
    assert latest == floor.WARM_UP + 2
    snapshot = Snapshot.from_json((tmp_path / "t" / "snapshot" / f"snapshot-{latest}").read_bytes())
    assert snapshot.delta_record_count == 3 * 10
    manifest_dir = tmp_path / "t" / "manifest"
    (meta,) = decode_manifest_list((manifest_dir / snapshot.delta_manifest_list).read_bytes())
    assert meta.num_added_files == 3
    entries = decode_manifest((manifest_dir / meta.file_name).read_bytes())
    assert [e.file.row_count for e in entries] == [10, 10, 10]


def test_the_floor_transaction_leaves_no_scratch_tables(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        with engine.begin() as conn:  # the service's tables need not exist for the floor
            before = set(inspect(conn).get_table_names())
        measured = floor.transaction_ms(database_url, "{}", repeats=3)
        assert measured["sqlalchemy"]["n"] == 3
        assert ("psycopg" in measured) == (engine.dialect.name == "postgresql")
        with engine.begin() as conn:
            assert set(inspect(conn).get_table_names()) == before
    finally:
        engine.dispose()
