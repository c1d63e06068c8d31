"""pypaimon, the independent judge, reads row for row what the coordinator committed."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.support.commits import commit
from tests.support.paimon_files import PaimonTable, create_table, group_by_bucket, pypaimon_rows, sorted_rows

STORES = ("local", "s3")

PK_FIELDS = {"dt": "STRING", "id": "BIGINT", "v": "STRING"}


def test_partitioned_append_table_after_three_commits(api: TestClient, warehouse_location: str) -> None:
    table = create_table(
        api, "sales", "events", {"dt": "STRING", "id": "BIGINT", "v": "DOUBLE"}, partitionKeys=["dt"]
    )
    expected: list[dict[str, Any]] = []
    for i in range(3):
        rows = [{"dt": f"2024-01-0{1 + i % 2}", "id": i * 100 + j, "v": j / 4} for j in range(7)]
        expected += rows
        snapshots = commit(api, table, [table.append_message(rows)])
        assert snapshots == [{"id": i + 1, "commitKind": "APPEND"}]
        assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(expected)
    assert pypaimon_rows(warehouse_location, table.id, snapshot_id=1) == sorted_rows(expected[:7])


def _pk_commit(api: TestClient, table: PaimonTable, rows: list[dict[str, Any]], sequence: int) -> int:
    """Write rows as level-0 files, one per (partition, bucket), and commit them; the next sequence."""
    messages = []
    for group in group_by_bucket(table, rows).values():
        messages.append(table.message(group[0], newFiles=[table.pk_file(group, first_sequence=sequence)]))
        sequence += len(group)
    commit(api, table, messages)
    return sequence


def _apply(model: dict[tuple[str, int], dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    for row in rows:
        key = (row["dt"], row["id"])
        if row.get("_kind") == "-D":
            model.pop(key, None)
        else:
            model[key] = {k: row[k] for k in PK_FIELDS}


def _compact_all(
    api: TestClient, table: PaimonTable, model: dict[tuple[str, int], dict[str, Any]], sequence: int
) -> list[dict[str, Any]]:
    """Replace every bucket's live files by one level-5 file holding the model's rows of that bucket."""
    files = api.get(f"/tables/{table.id}/files").json()["files"]
    by_bucket: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for f in files:
        by_bucket.setdefault((f["partition"]["dt"], f["bucket"]), []).append(f)
    messages = []
    for (dt, bucket), live in by_bucket.items():
        rows = [r for (d, _), r in model.items() if d == dt and table.bucket(r) == bucket]
        before = [
            {
                "fileName": f["fileName"],
                "fileSize": f["fileSize"],
                "rowCount": f["rowCount"],
                "level": f["level"],
                "minKey": f["minKey"],
                "maxKey": f["maxKey"],
            }
            for f in live
        ]
        after = [table.pk_file(rows, first_sequence=sequence, level=5)] if rows else []
        sequence += len(rows)
        messages.append(
            {"partition": {"dt": dt}, "bucket": bucket, "compactBefore": before, "compactAfter": after}
        )
    return commit(api, table, messages)


def test_primary_key_table_updates_deletes_then_compaction_then_overwrite(
    api: TestClient, warehouse_location: str
) -> None:
    table = create_table(
        api,
        "sales",
        "orders",
        PK_FIELDS,
        partitionKeys=["dt"],
        primaryKeys=["dt", "id"],
        options={"bucket": "4"},
    )
    model: dict[tuple[str, int], dict[str, Any]] = {}
    inserts = [{"dt": dt, "id": i, "v": f"v0-{i}"} for dt in ("a", "b") for i in range(40)]
    sequence = _pk_commit(api, table, inserts, 0)
    _apply(model, inserts)
    # Overlapping level-0 files: updates of 0..19 and deletes of 30..34 in both partitions.
    changes: list[dict[str, Any]] = [
        {"dt": dt, "id": i, "v": f"v1-{i}"} for dt in ("a", "b") for i in range(20)
    ]
    changes += [{"dt": dt, "id": i, "v": None, "_kind": "-D"} for dt in ("a", "b") for i in range(30, 35)]
    sequence = _pk_commit(api, table, changes, sequence)
    _apply(model, changes)
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(model.values())
    assert len(pypaimon_rows(warehouse_location, table.id)) == 70

    snapshots = _compact_all(api, table, model, sequence)
    assert snapshots == [{"id": 3, "commitKind": "COMPACT"}]
    live = api.get(f"/tables/{table.id}/files").json()["files"]
    assert live
    assert {f["level"] for f in live} == {5}
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(model.values())
    # Time travel to before the compaction still sees the same rows through the level-0 files.
    assert pypaimon_rows(warehouse_location, table.id, snapshot_id=2) == sorted_rows(model.values())

    replacement = [{"dt": "a", "id": i, "v": f"new-{i}"} for i in range(100, 110)]
    messages = [
        table.message(g[0], newFiles=[table.pk_file(g, first_sequence=sequence)])
        for g in group_by_bucket(table, replacement).values()
    ]
    snapshots = commit(api, table, messages, overwrite={"mode": "static", "partition": {"dt": "a"}})
    assert snapshots == [{"id": 4, "commitKind": "OVERWRITE"}]
    model = {k: r for k, r in model.items() if k[0] != "a"}
    _apply(model, replacement)
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(model.values())
    latest = api.get(f"/tables/{table.id}/snapshots/latest").json()
    assert latest["totalRecordCount"] == sum(
        f["rowCount"] for f in api.get(f"/tables/{table.id}/files").json()["files"]
    )
