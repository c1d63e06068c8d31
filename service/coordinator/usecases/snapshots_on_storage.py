"""Finding schemas and snapshots on storage the way Paimon's readers do (hints first, listing second)."""

from __future__ import annotations

from coordinator.storage.fileio import FileIO
from coordinator.storage.layout import TableLayout
from coordinator_client.format.snapshot import EARLIEST, LATEST, parse_hint, parse_snapshot_file_name


def latest_schema_id(fileio: FileIO, layout: TableLayout) -> int | None:
    ids = [
        int(n[len("schema-") :])
        for n in fileio.list_names(layout.schema_dir)
        if n.startswith("schema-") and n[len("schema-") :].isdigit()
    ]
    return max(ids) if ids else None


def find_latest_snapshot_id(fileio: FileIO, layout: TableLayout) -> int | None:
    """LATEST is trusted only if snapshot-<hint> exists and snapshot-<hint+1> does not (HintFileUtils)."""
    hint_path = layout.hint(LATEST)
    if fileio.exists(hint_path):
        hint = parse_hint(fileio.read(hint_path))
        if (
            hint is not None
            and fileio.exists(layout.snapshot(hint))
            and not fileio.exists(layout.snapshot(hint + 1))
        ):
            return hint
    ids = [i for i in (parse_snapshot_file_name(n) for n in fileio.list_names(layout.snapshot_dir)) if i]
    return max(ids) if ids else None


def find_earliest_snapshot_id(fileio: FileIO, layout: TableLayout) -> int | None:
    """EARLIEST is trusted only if snapshot-<hint> exists and snapshot-<hint-1> does not; else a listing."""
    hint_path = layout.hint(EARLIEST)
    if fileio.exists(hint_path):
        hint = parse_hint(fileio.read(hint_path))
        if (
            hint is not None
            and fileio.exists(layout.snapshot(hint))
            and (hint == 1 or not fileio.exists(layout.snapshot(hint - 1)))
        ):
            return hint
    ids = [i for i in (parse_snapshot_file_name(n) for n in fileio.list_names(layout.snapshot_dir)) if i]
    return min(ids) if ids else None
