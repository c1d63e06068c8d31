"""After a contention run: is every acknowledged commit visible, on storage and to an independent reader?

Used for both sides, because both produce plain Paimon tables: the snapshot files are walked for the
(commitUser, commitIdentifier) pairs they record, and pypaimon reads the rows back. A commit is LOST when
its writer was told it succeeded but its snapshot or its rows are not in the table.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

Pair = tuple[str, int]


def snapshot_pairs(table_dir: Path) -> dict[int, Pair]:
    """snapshot id -> (commitUser, commitIdentifier), from every snapshot-N file of the table."""
    out: dict[int, Pair] = {}
    for path in (table_dir / "snapshot").glob("snapshot-*"):
        body = json.loads(path.read_text())
        out[int(body["id"])] = (str(body["commitUser"]), int(body["commitIdentifier"]))
    return out


def read_ids(warehouse: Path, table_id: str) -> list[int]:
    """Every id pypaimon reads from the latest snapshot (duplicates kept, to catch double commits)."""
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": str(warehouse)}).get_table(table_id)
    builder = table.new_read_builder()
    arrow = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return [] if arrow is None else [int(v) for v in arrow.column("id").to_pylist()]


def verify_contention(
    warehouse: Path,
    table_id: str,
    table_dir: Path,
    acknowledged: Mapping[Pair, range],
    claimed_snapshots: Mapping[Pair, int] | None = None,
) -> dict[str, Any]:
    """Check each acknowledged commit (pair -> its row ids); `claimed_snapshots` are ids the writer was told.

    Returns the counts in the JSON results: `lost` (acknowledged but not visible), `rows_read`,
    `rows_expected`, `duplicate_rows`, `wrong_snapshot_claims`, `snapshot_ids_contiguous`.
    """
    snapshots = snapshot_pairs(table_dir)
    visible_pairs = Counter(snapshots.values())
    ids = read_ids(warehouse, table_id)
    id_counts = Counter(ids)
    lost = [
        pair
        for pair, expected in acknowledged.items()
        if visible_pairs[pair] == 0 or any(id_counts[i] == 0 for i in expected)
    ]
    wrong_claims = [pair for pair, sid in (claimed_snapshots or {}).items() if snapshots.get(sid) != pair]
    return {
        "acknowledged": len(acknowledged),
        "lost": len(lost),
        "lost_samples": [list(p) for p in lost[:5]],
        "rows_read": len(ids),
        "rows_expected": sum(len(r) for r in acknowledged.values()),
        "duplicate_rows": sum(n - 1 for n in id_counts.values() if n > 1),
        "commits_in_two_snapshots": sum(1 for n in visible_pairs.values() if n > 1),
        "wrong_snapshot_claims": len(wrong_claims),
        "latest_snapshot_id": max(snapshots, default=0),
        "snapshot_ids_contiguous": sorted(snapshots) == list(range(1, len(snapshots) + 1)),
    }
