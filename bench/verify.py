"""After a contention run: is every acknowledged commit visible, on storage and to an independent reader?

Used for both sides, because both produce plain Paimon tables, on a local warehouse or an object store
alike: the snapshot files are walked for the (commitUser, commitIdentifier) pairs they record, and
pypaimon reads the rows back. A commit is LOST when its writer was told it succeeded but its snapshot or
its rows are not in the table (or only its rows, for the S3 benchmark's count).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pyarrow.fs as pafs

from coordinator_client.spark.layout import filesystem

Pair = tuple[str, int]


def snapshot_pairs(location: str) -> dict[int, Pair]:
    """snapshot id -> (commitUser, commitIdentifier), from every snapshot-N file of the table."""
    fs, root = filesystem(location)
    out: dict[int, Pair] = {}
    for info in fs.get_file_info(pafs.FileSelector(f"{root}/snapshot", allow_not_found=True)):
        if info.base_name.startswith("snapshot-"):
            with fs.open_input_stream(info.path) as stream:
                body = json.loads(stream.read())
            out[int(body["id"])] = (str(body["commitUser"]), int(body["commitIdentifier"]))
    return out


def read_ids(catalog: Mapping[str, str], table_id: str) -> list[int]:
    """Every id pypaimon reads from the latest snapshot (duplicates kept, to catch double commits)."""
    from pypaimon import CatalogFactory

    table = CatalogFactory.create(dict(catalog)).get_table(table_id)
    builder = table.new_read_builder()
    arrow = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return [] if arrow is None else [int(v) for v in arrow.column("id").to_pylist()]


def verify_contention(
    catalog: Mapping[str, str],
    table_id: str,
    location: str,
    acknowledged: Mapping[Pair, range],
    claimed_snapshots: Mapping[Pair, int] | None = None,
    *,
    rows_only: bool = False,
) -> dict[str, Any]:
    """Check each acknowledged commit (pair -> its row ids); `claimed_snapshots` are ids the writer was told.

    `catalog` is pypaimon's catalog options for reading the table back, `location` the table's folder
    (a local path or an `s3://` URI). A commit is lost when a row of it is missing or, unless `rows_only`,
    when no snapshot file records its pair; `not_in_a_snapshot_file` counts the latter alone. (A commit
    can keep its rows and lose its record when a writer built on a snapshot that was then overwritten:
    a reader sees its rows, but commit history and dedup by identifier no longer know it.)

    Returns the counts in the JSON results: `lost`, `not_in_a_snapshot_file`, `rows_read`,
    `rows_expected`, `duplicate_rows`, `wrong_snapshot_claims`, `snapshot_files`,
    `snapshot_ids_contiguous`.
    """
    snapshots = snapshot_pairs(location)
    visible_pairs = Counter(snapshots.values())
    id_counts = Counter(read_ids(catalog, table_id))
    unrecorded = [pair for pair in acknowledged if visible_pairs[pair] == 0]
    lost = [
        pair
        for pair, expected in acknowledged.items()
        if (not rows_only and visible_pairs[pair] == 0) or any(id_counts[i] == 0 for i in expected)
    ]
    wrong_claims = [pair for pair, sid in (claimed_snapshots or {}).items() if snapshots.get(sid) != pair]
    return {
        "acknowledged": len(acknowledged),
        "lost": len(lost),
        "lost_samples": [list(p) for p in lost[:5]],
        "not_in_a_snapshot_file": len(unrecorded),
        "rows_read": sum(id_counts.values()),
        "rows_expected": sum(len(r) for r in acknowledged.values()),
        "duplicate_rows": sum(n - 1 for n in id_counts.values() if n > 1),
        "commits_in_two_snapshots": sum(1 for n in visible_pairs.values() if n > 1),
        "wrong_snapshot_claims": len(wrong_claims),
        "snapshot_files": len(snapshots),
        "latest_snapshot_id": max(snapshots, default=0),
        "snapshot_ids_contiguous": sorted(snapshots) == list(range(1, len(snapshots) + 1)),
    }
