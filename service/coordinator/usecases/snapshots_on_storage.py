"""Finding schemas and snapshots on storage the way Paimon's readers do (hints first, listing second)."""

from __future__ import annotations

from collections.abc import Callable

from coordinator.storage.fileio import FileIO
from coordinator.storage.layout import TableLayout
from paimon_format.snapshot import EARLIEST, LATEST, parse_hint, parse_snapshot_file_name


def latest_schema_id(fileio: FileIO, layout: TableLayout) -> int | None:
    ids = [
        int(n[len("schema-") :])
        for n in fileio.list_names(layout.schema_dir)
        if n.startswith("schema-") and n[len("schema-") :].isdigit()
    ]
    return max(ids) if ids else None


def find_latest_snapshot_id(fileio: FileIO, layout: TableLayout) -> int | None:
    """LATEST is trusted only if snapshot-<hint> exists and snapshot-<hint+1> does not (HintFileUtils)."""
    return _find_end(fileio, layout, LATEST, step=1, pick=max)


def find_earliest_snapshot_id(fileio: FileIO, layout: TableLayout) -> int | None:
    """EARLIEST is trusted only if snapshot-<hint> exists and snapshot-<hint-1> does not."""
    return _find_end(fileio, layout, EARLIEST, step=-1, pick=min)


def _find_end(
    fileio: FileIO, layout: TableLayout, hint_name: str, *, step: int, pick: Callable[[list[int]], int]
) -> int | None:
    """One end of the snapshot range: the hint when its snapshot exists and is the end, else a listing."""
    hint_path = layout.hint(hint_name)
    if fileio.exists(hint_path):
        hint = parse_hint(fileio.read(hint_path))
        if (
            hint is not None
            and fileio.exists(layout.snapshot(hint))
            and (hint + step < 1 or not fileio.exists(layout.snapshot(hint + step)))
        ):
            return hint
    ids = [i for i in (parse_snapshot_file_name(n) for n in fileio.list_names(layout.snapshot_dir)) if i]
    return pick(ids) if ids else None
