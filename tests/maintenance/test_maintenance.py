"""Table maintenance through the API: consumers, bounded expiration, rollback to a tag, orphan cleanup,
option changes, expiration after commits, and rejected requests that change nothing."""

from __future__ import annotations

import io
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from coordinator.services import Services
from coordinator_client.models import CommitRequest
from tests.support.commits import commit, history
from tests.support.paimon_files import (
    S3_OLD_S,
    PaimonTable,
    create_table,
    file_exists,
    file_names,
    make_old,
    pypaimon_rows,
    sorted_rows,
    tree_times,
    write_bytes,
)

STORES = ("local", "s3")

FIELDS = {"dt": "STRING", "id": "BIGINT", "v": "STRING"}
EXPIRE_EVERYTHING_OLD = {"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"}
SNAPSHOTS = int(os.environ.get("SNAPS", "10000"))
MANUAL = {**EXPIRE_EVERYTHING_OLD, "write-only": "true"}
"""Retention that expires every old snapshot, but only when asked (commits do not expire)."""


def append(api: TestClient, table: PaimonTable, rows: list[dict[str, Any]]) -> int:
    """Commit one data file of `rows`; returns the new snapshot id."""
    snapshots = commit(api, table, [table.append_message(rows)])
    return int(snapshots[-1]["id"])


def rows_of(i: int) -> list[dict[str, Any]]:
    return [{"dt": "2026-11-21", "id": i * 10 + j, "v": f"commit-{i}"} for j in range(3)]


def set_options(api: TestClient, table: PaimonTable, options: dict[str, str]) -> None:
    response = api.patch(f"/tables/{table.id}/options", json={"set": options})
    assert response.status_code == 200, response.text


def expire(api: TestClient, table: PaimonTable) -> dict[str, Any]:
    time.sleep(0.002)  # every snapshot is older than the 1 ms time-retained
    response = api.post(f"/tables/{table.id}/expire")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def storage(table: PaimonTable) -> dict[str, float]:
    """Every file under the table with its modification time."""
    return tree_times(table.location)


def data_files(table: PaimonTable) -> set[str]:
    return {p for p in storage(table) if p.endswith(".parquet")}


def test_a_consumer_keeps_its_snapshots_until_it_advances_or_expires(
    api: TestClient, store: str, warehouse_location: str
) -> None:
    table = create_table(api, "maint", f"consumed_{uuid.uuid4().hex[:6]}", FIELDS)
    set_options(api, table, MANUAL)
    expected: dict[int, list[dict[str, Any]]] = {}
    everything: list[dict[str, Any]] = []
    for i in range(1, 7):
        everything += rows_of(i)
        expected[append(api, table, rows_of(i))] = list(everything)
    response = api.put(f"/tables/{table.id}/consumers/orders-stream", json={"nextSnapshotId": 5})
    assert response.status_code == 200, response.text
    assert response.json()["nextSnapshotId"] == 5

    for round_ in range(3):
        for i in range(2):
            everything += rows_of(10 * (round_ + 1) + i)
            expected[append(api, table, rows_of(10 * (round_ + 1) + i))] = list(everything)
        assert expire(api, table)["earliestSnapshotId"] == 5
        for snapshot_id in range(5, max(expected) + 1):
            assert pypaimon_rows(warehouse_location, table.id, snapshot_id) == sorted_rows(
                expected[snapshot_id]
            )
    assert api.get(f"/tables/{table.id}/snapshots/4").status_code == 404

    latest = max(expected)
    api.put(f"/tables/{table.id}/consumers/orders-stream", json={"nextSnapshotId": latest})
    assert expire(api, table)["earliestSnapshotId"] == latest

    # Idle past consumer.expiration-time: the consumer goes, and protects nothing any more.
    idle_after = "1 h" if store == "local" else f"{S3_OLD_S:.0f} s"  # S3 ages files by waiting (make_old)
    set_options(api, table, {"snapshot.num-retained.max": "1", "consumer.expiration-time": idle_after})
    everything += rows_of(99)
    newest = append(api, table, rows_of(99))
    assert expire(api, table)["earliestSnapshotId"] == latest  # the consumer, not yet idle, still holds
    assert [c["consumerId"] for c in api.get(f"/tables/{table.id}/consumers").json()["consumers"]] == [
        "orders-stream"
    ]
    make_old([f"{table.location}/consumer/consumer-orders-stream"], 7200)
    result = expire(api, table)
    assert result["expiredConsumers"] == ["orders-stream"]
    assert result["earliestSnapshotId"] == newest
    assert api.get(f"/tables/{table.id}/consumers").json()["consumers"] == []
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(everything)


@pytest.mark.slow  # ten thousand snapshots are committed first
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.stores("local")  # the batching is the database's; ten thousand commits on S3 cost minutes
def test_expiring_ten_thousand_snapshots_takes_bounded_batches_and_lets_a_commit_through(
    services: Services, api: TestClient, warehouse: Path
) -> None:
    table = create_table(api, "maint", "busy", {"id": "BIGINT"})
    # Only the snapshots matter here: every file holds the same one row, written once (the commit reads
    # each file's footer); the overwrite below replaces them before anything reads them.
    sink = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), sink)
    one_row = sink.getvalue()

    def commit_many(worker: int, count: int) -> None:
        for i in range(count):
            name = f"data-{uuid.uuid4()}-0.parquet"
            meta = {"fileName": name, "fileSize": len(one_row), "rowCount": 1}
            (table.path / "bucket-0").mkdir(exist_ok=True)
            (table.path / "bucket-0" / name).write_bytes(one_row)
            message = {"bucket": 0, "newFiles": [meta]}
            request = {"commitUser": f"w{worker}", "identifier": i, "messages": [message]}
            services.committer.commit(table.id, CommitRequest.model_validate(request))

    with ThreadPoolExecutor(8) as pool:
        for done in [pool.submit(commit_many, w, SNAPSHOTS // 8) for w in range(8)]:
            done.result()
    row = {"id": 1}
    message = table.append_message([row])
    overwrite = {"commitUser": "seed", "messages": [message], "overwrite": {"mode": "table"}}
    services.committer.commit(table.id, CommitRequest.model_validate(overwrite))
    latest = services.tables.latest_snapshot_id(table.id)
    assert latest == SNAPSHOTS + 1
    set_options(api, table, {**MANUAL, "snapshot.expire.limit": "50"})
    time.sleep(0.002)

    with ThreadPoolExecutor(1) as pool:
        expiring = pool.submit(services.maintenance.expire, table.id, actor="ops")
        while not any(c["action"] == "expire" for c in history(api, table.id)[:5]):
            time.sleep(0.01)
        # A commit arriving mid-expiration is served between two batches, long before the expiration ends.
        late = append(api, table, [{"id": 2}])
        assert not expiring.done()
        result = expiring.result()

    assert result.expired_snapshots == latest  # everything but the newest of 10,002
    assert result.earliest_snapshot_id == late
    records = [c for c in reversed(history(api, table.id)) if c["action"] in ("expire", "commit")]
    batches = [c for c in records if c["action"] == "expire"]
    assert len(batches) == result.batches == -(-latest // 50)
    for batch in batches:
        first, last = batch["details"]["snapshots"]
        assert last - first + 1 <= 50
        assert batch["commitUser"] == "ops"
    position = next(i for i, c in enumerate(records) if late in [s["id"] for s in c["snapshots"]])
    assert records[position - 1]["action"] == "expire"
    assert records[position + 1]["action"] == "expire"
    assert sorted(os.listdir(table.path / "snapshot")) == ["EARLIEST", "LATEST", f"snapshot-{late}"]
    assert pypaimon_rows(warehouse, table.id) == [{"id": 1}, {"id": 2}]


def test_rollback_to_a_tag_then_new_commits_continue_from_the_tag(
    api: TestClient, warehouse_location: str
) -> None:
    table = create_table(api, "maint", f"rolled_{uuid.uuid4().hex[:6]}", FIELDS, partitionKeys=["dt"])
    set_options(api, table, MANUAL)
    everything: list[dict[str, Any]] = []
    for i in range(1, 4):
        everything += rows_of(i)
        append(api, table, rows_of(i))
    tagged = list(everything)
    response = api.post(f"/tables/{table.id}/tags", json={"name": "release-1"})
    assert response.status_code == 201, response.text
    assert response.json()["snapshotId"] == 3
    files_of_tag = data_files(table)
    for i in range(4, 8):
        append(api, table, rows_of(i))
    # A compaction-style overwrite replaces every file, then expiration removes snapshot 3 itself.
    commit(
        api,
        table,
        [table.message(rows_of(8)[0], newFiles=[table.append_file(rows_of(8))])],
        overwrite={"mode": "table"},
    )
    assert expire(api, table)["earliestSnapshotId"] == 8
    assert files_of_tag <= data_files(table)  # the tag keeps its files through expiration

    response = api.post(f"/tables/{table.id}/rollback", json={"tag": "release-1"})
    assert response.status_code == 200, response.text
    assert response.json()["latestSnapshotId"] == 3
    assert response.json()["removedSnapshots"] == [8]
    assert data_files(table) == files_of_tag  # nothing only the removed snapshots referenced remains

    new_rows = [{"dt": "2026-11-22", "id": 1000, "v": "after rollback"}]
    assert append(api, table, new_rows) == 4
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(tagged + new_rows)
    assert pypaimon_rows(warehouse_location, table.id, 3) == sorted_rows(tagged)
    rollback = next(c for c in history(api, table.id) if c["action"] == "rollback")
    assert rollback["details"]["to"] == {"snapshotId": 3, "tag": "release-1"}
    assert rollback["details"]["deleted"]["dataFiles"] == 1  # the overwrite's file


def test_orphan_cleanup_lists_then_deletes_old_unreferenced_files_only(
    api: TestClient, warehouse_location: str
) -> None:
    table = create_table(api, "maint", f"orphans_{uuid.uuid4().hex[:6]}", FIELDS)
    append(api, table, rows_of(1))
    committed = storage(table)
    old_orphan = f"{table.location}/bucket-0/data-failed-job-0.parquet"
    write_bytes(old_orphan, b"left by a failed job")
    # Referenced files are never orphans, however old.
    s3_age = make_old([old_orphan, *(f"{table.location}/{path}" for path in committed)], 2 * 86_400)
    young_orphan = f"{table.location}/bucket-0/data-running-job-0.parquet"
    write_bytes(young_orphan, b"a job still writing")

    # Local files are two days old: the default threshold (a day) finds them, as one of an hour does.
    dry_threshold = {} if s3_age is None else {"olderThanSeconds": s3_age}
    dry = api.post(f"/tables/{table.id}/orphans/clean", json={"dryRun": True, **dry_threshold})
    assert dry.status_code == 200, dry.text
    assert dry.json() == {"dryRun": True, "files": ["bucket-0/data-failed-job-0.parquet"]}
    assert file_exists(old_orphan)

    threshold = 3600 if s3_age is None else s3_age
    done = api.post(f"/tables/{table.id}/orphans/clean", json={"olderThanSeconds": threshold})
    assert done.json()["files"] == ["bucket-0/data-failed-job-0.parquet"]
    assert not file_exists(old_orphan)
    assert file_exists(young_orphan)
    assert set(storage(table)) == set(committed) | {"bucket-0/data-running-job-0.parquet"}
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(rows_of(1))
    record = history(api, table.id)[0]
    assert record["action"] == "clean-orphans"
    assert record["details"]["files"] == done.json()["files"]


def test_option_changes_write_a_schema_version_and_expire_after_each_commit(
    api: TestClient, warehouse_location: str
) -> None:
    table = create_table(api, "maint", f"auto_{uuid.uuid4().hex[:6]}", FIELDS)
    response = api.patch(
        f"/tables/{table.id}/options",
        json={"set": {"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"}},
        headers={"X-Coordinator-User": "alice"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["schema"]["id"] == 1
    assert response.json()["schema"]["options"]["snapshot.num-retained.max"] == "2"
    assert file_exists(f"{table.location}/schema/schema-1")
    everything = []
    for i in range(1, 6):
        everything += rows_of(i)
        latest = append(api, table, rows_of(i))
        names = sorted(n for n in file_names(f"{table.location}/snapshot") if n.startswith("snapshot-"))
        assert names == sorted(f"snapshot-{s}" for s in range(max(1, latest - 1), latest + 1))
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(everything)
    actions = [(c["commitUser"], c["action"]) for c in history(api, table.id) if c["outcome"] == "done"]
    assert ("alice", "set-options") in actions
    assert ("auto-expire", "expire") in actions

    api.patch(f"/tables/{table.id}/options", json={"set": {"snapshot.expire.execution-mode": "async"}})
    for i in range(6, 9):
        everything += rows_of(i)
        latest = append(api, table, rows_of(i))
    deadline = time.monotonic() + 10
    expired = f"{table.location}/snapshot/snapshot-{latest - 2}"
    while file_exists(expired) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not file_exists(expired)
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(everything)


@pytest.mark.stores("local")  # refused before storage is touched; the S3 variants would only add time
@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field"),
    [
        ("patch", "options", {"set": {"bucket": "8"}}, 422, "set.bucket"),
        ("patch", "options", {"remove": ["primary-key"]}, 422, "remove.primary-key"),
        (
            "patch",
            "options",
            {"set": {"snapshot.num-retained.min": "0"}},
            422,
            "set.snapshot.num-retained.min",
        ),
        ("patch", "options", {"set": {"snapshot.time-retained": "soon"}}, 422, "set.snapshot.time-retained"),
        ("post", "tags", {"name": "../escape"}, 422, "name"),
        ("post", "tags", {"name": "t", "snapshotId": 99}, 404, None),
        ("post", "tags", {"name": "t", "snapshotId": 0}, 422, "snapshotId"),
        ("post", "rollback", {"snapshotId": 1, "tag": "t"}, 422, "snapshotId"),
        ("post", "rollback", {"snapshotId": 99}, 404, None),
        ("post", "rollback", {"tag": "missing"}, 404, None),
        ("put", "consumers/c1", {"nextSnapshotId": 5}, 422, "nextSnapshotId"),
        ("put", "consumers/c1", {"nextSnapshotId": "two"}, 422, "nextSnapshotId"),
        ("delete", "consumers/c1", None, 404, None),
        ("delete", "tags/missing", None, 404, None),
        ("post", "orphans/clean", {"olderThanSeconds": -1}, 422, "olderThanSeconds"),
    ],
)
def test_rejected_maintenance_changes_nothing(
    api: TestClient,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    status: int,
    field: str | None,
) -> None:
    table = create_table(
        api, "maint", f"bad_{uuid.uuid4().hex[:6]}", FIELDS, primaryKeys=["id"], options={"bucket": "2"}
    )
    append_table = create_table(api, "maint", f"bad_append_{uuid.uuid4().hex[:6]}", FIELDS)
    append(api, append_table, rows_of(1))
    target = table if path == "options" and "remove" in (body or {}) else append_table
    before_files, before_history = storage(target), history(api, target.id)
    kwargs = {"json": body} if body is not None else {}
    response = api.request(method.upper(), f"/tables/{target.id}/{path}", **kwargs)
    assert response.status_code == status, response.text
    if field is not None:
        assert response.json()["field"] == field
    assert storage(target) == before_files
    assert history(api, target.id) == before_history
    assert api.get(f"/tables/{target.id}").json()["schema"]["id"] == 0
