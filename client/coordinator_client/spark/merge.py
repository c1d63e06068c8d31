"""Paimon's deduplicate merge over primary-key rows in Arrow: per key, the row with the highest sequence.

Paimon's writers merge their sort buffer before they write, so a data file holds each key at most once;
readers (pypaimon among them) merge only across files. Our writer and compactor keep that promise here.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from coordinator_client.spark.layout import (
    INSERT,
    KEY_PREFIX,
    SEQUENCE_NUMBER,
    UPDATE_AFTER,
    VALUE_KIND,
    SparkTable,
)


def key_ends(layout: SparkTable, rows: pa.Table) -> pa.Array:
    """For rows sorted by key: True where the next row has another key (and for the last row)."""
    n = rows.num_rows
    if n == 0:
        return pa.array([], pa.bool_())
    ends: pa.Array | None = None
    for k in layout.key_names:
        column = rows[KEY_PREFIX + k].combine_chunks()
        step = pc.not_equal(column.slice(0, n - 1), column.slice(1))
        ends = step if ends is None else pc.or_(ends, step)
    assert ends is not None, "a primary-key table has at least one trimmed key field"
    return pa.concat_arrays([ends, pa.array([True])])


def split_last_key(layout: SparkTable, rows: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Rows sorted by key, cut before the rows of their last key (which the next rows may continue)."""
    ends = key_ends(layout, rows).to_numpy(zero_copy_only=False)
    boundaries = ends[:-1].nonzero()[0]
    start = int(boundaries[-1]) + 1 if len(boundaries) else 0
    return rows.slice(0, start), rows.slice(start)


def newest_per_key(layout: SparkTable, rows: pa.Table) -> pa.Table:
    """Of rows sorted by key, then sequence number: the last row of each key."""
    if rows.num_rows <= 1:
        return rows
    return rows.filter(key_ends(layout, rows))


def merge_by_key(layout: SparkTable, rows: pa.Table) -> pa.Table:
    """Rows of many files merged as at the top level: sorted, newest per key, deletes and retractions gone."""
    keys = [KEY_PREFIX + k for k in layout.key_names]
    order = pc.sort_indices(rows, sort_keys=[(k, "ascending") for k in [*keys, SEQUENCE_NUMBER]])
    rows = newest_per_key(layout, rows.take(order))
    kinds = rows[VALUE_KIND]
    return rows.filter(pc.or_(pc.equal(kinds, INSERT), pc.equal(kinds, UPDATE_AFTER)))
