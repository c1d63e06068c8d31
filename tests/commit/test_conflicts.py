"""The conflict matrix, over HTTP, on both databases and both stores; a rejected commit leaves storage as
it was."""

from __future__ import annotations

import io
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from coordinator.domain.committable import resolve_committable
from coordinator.domain.table_schema import TableShape
from coordinator.services import Services
from coordinator_client.models import CommitRequest, CreateTableRequest, FieldSpec
from tests.support.commits import try_commit
from tests.support.paimon_files import (
    deletion_of,
    file_names,
    pk_table,
    rows_in_bucket,
    tree_digest,
)

STORES = ("local", "s3")


def test_two_compactions_deleting_the_same_file(api: TestClient) -> None:
    table = pk_table(api)
    rows = rows_in_bucket(table, 0, range(40))
    level0 = table.pk_file(rows, first_sequence=0)
    assert try_commit(api, table, [table.message(rows[0], newFiles=[level0])]).status_code == 201
    first = table.pk_file(rows, first_sequence=0, level=5)
    winner = try_commit(
        api,
        table,
        [table.message(rows[0], compactBefore=[deletion_of(level0)], compactAfter=[first])],
        user="compactor-1",
    )
    assert winner.status_code == 201
    before = tree_digest(table.location)
    second = table.pk_file(rows, first_sequence=0, level=4)
    after_second_file = tree_digest(table.location)
    loser = try_commit(
        api,
        table,
        [table.message(rows[0], compactBefore=[deletion_of(level0)], compactAfter=[second])],
        user="compactor-2",
    )
    assert loser.status_code == 409
    body = loser.json()
    assert body["conflict"]["type"] == "DELETED_FILE_MISSING"
    assert body["conflict"]["files"] == [level0["fileName"]]
    assert body["conflict"]["winningSnapshot"] == {
        "id": 2,
        "commitUser": "compactor-1",
        "commitKind": "COMPACT",
    }
    assert body["conflict"]["retryable"] is False
    assert body["conflict"]["partition"] == {"dt": "a"}
    assert body["conflict"]["bucket"] == 0
    # Nothing of the loser is on storage but its own data file, which the client deletes on abort.
    assert tree_digest(table.location) == after_second_file
    assert set(after_second_file) - set(before) == {f"dt=a/bucket-0/{second['fileName']}"}
    history = api.get(f"/tables/{table.id}/commits").json()["commits"]
    assert history[0]["outcome"] == "rejected"
    assert history[0]["conflict"]["type"] == "DELETED_FILE_MISSING"


def test_overlapping_level_one_files(api: TestClient) -> None:
    table = pk_table(api)
    low = rows_in_bucket(table, 1, range(50))
    high = rows_in_bucket(table, 1, range(40, 90))
    first = table.pk_file(low, first_sequence=0, level=1)
    assert try_commit(api, table, [table.message(low[0], compactAfter=[first])]).status_code == 201
    overlapping = table.pk_file(high, first_sequence=100, level=1)
    response = try_commit(api, table, [table.message(high[0], compactAfter=[overlapping])])
    assert response.status_code == 409
    conflict = response.json()["conflict"]
    assert conflict["type"] == "LSM_KEY_RANGE_OVERLAP"
    assert set(conflict["files"]) == {first["fileName"], overlapping["fileName"]}
    assert conflict["winningSnapshot"]["id"] == 1
    # The same range one level down is fine: levels are separate sorted runs.
    assert (
        try_commit(
            api,
            table,
            [table.message(high[0], compactAfter=[table.pk_file(high, first_sequence=200, level=2)])],
        ).status_code
        == 201
    )


def test_changed_bucket_count(api: TestClient) -> None:
    table = pk_table(api)
    rows = rows_in_bucket(table, 0, range(20))
    assert (
        try_commit(
            api, table, [table.message(rows[0], newFiles=[table.pk_file(rows, first_sequence=0)])]
        ).status_code
        == 201
    )
    rescaled = {
        **table.message(rows[0], newFiles=[table.pk_file(rows, first_sequence=50)]),
        "totalBuckets": 3,
    }
    response = try_commit(api, table, [rescaled])
    assert response.status_code == 409
    assert response.json()["conflict"]["type"] == "BUCKET_COUNT_CHANGED"
    # An overwrite of the partition may change it (a rescale), as in Paimon.
    assert try_commit(api, table, [rescaled], overwrite={"mode": "dynamic"}).status_code == 201


def test_two_appends_to_the_same_bucket_both_succeed(api: TestClient) -> None:
    table = pk_table(api)
    rows = rows_in_bucket(table, 1, range(30))
    for sequence in (0, 100):
        message = table.message(rows[0], newFiles=[table.pk_file(rows, first_sequence=sequence)])
        assert try_commit(api, table, [message]).status_code == 201
    assert len(api.get(f"/tables/{table.id}/files").json()["files"]) == 2


def test_resend_is_deduplicated(api: TestClient) -> None:
    table = pk_table(api)
    rows = rows_in_bucket(table, 0, range(10))
    message = table.message(rows[0], newFiles=[table.pk_file(rows, first_sequence=0)])
    first = try_commit(api, table, [message], user="stream-1", identifier=7)
    assert first.status_code == 201
    snapshot_files = tree_digest(f"{table.location}/snapshot")
    assert file_names(f"{table.location}/snapshot") == ["LATEST", "snapshot-1"]
    again = try_commit(api, table, [message], user="stream-1", identifier=7)
    assert again.status_code == 200
    assert again.json()["deduplicated"] is True
    assert again.json()["snapshots"] == first.json()["snapshots"]
    assert tree_digest(f"{table.location}/snapshot") == snapshot_files
    outcome = api.get(f"/tables/{table.id}/commits/stream-1/7").json()
    assert outcome["status"] == "committed"
    assert outcome["snapshots"] == first.json()["snapshots"]
    assert api.get(f"/tables/{table.id}/commits/stream-1/8").json()["status"] == "unknown"


def test_idempotency_key_replays_the_answer(api: TestClient) -> None:
    table = pk_table(api)
    rows = rows_in_bucket(table, 0, range(10))
    message = table.message(rows[0], newFiles=[table.pk_file(rows, first_sequence=0)])
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = try_commit(api, table, [message], user="job-1", headers=key)
    again = try_commit(api, table, [message], user="job-1", headers=key)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["snapshots"] == first.json()["snapshots"]
    # The key with another request (another commitUser) is refused, as the IETF draft says: 422.
    other = try_commit(api, table, [message], user="job-2", headers=key)
    assert other.status_code == 422, other.text
    assert (other.json()["code"], other.json()["field"]) == ("IDEMPOTENCY_KEY_REUSED", "Idempotency-Key")
    assert api.get(f"/tables/{table.id}/snapshots/latest").json()["id"] == 1


def test_strict_mode_base_snapshot(api: TestClient) -> None:
    table = pk_table(api)
    rows = rows_in_bucket(table, 0, range(10))
    assert (
        try_commit(
            api,
            table,
            [table.message(rows[0], newFiles=[table.pk_file(rows, first_sequence=0)])],
            baseSnapshotId=0,
        ).status_code
        == 201
    )
    stale = try_commit(
        api,
        table,
        [table.message(rows[0], newFiles=[table.pk_file(rows, first_sequence=10)])],
        baseSnapshotId=0,
    )
    assert stale.status_code == 409
    assert stale.json()["conflict"]["type"] == "BASE_SNAPSHOT_MOVED"
    assert stale.json()["conflict"]["retryable"] is True


def test_adding_a_live_file_again(api: TestClient) -> None:
    table = pk_table(api)
    rows = rows_in_bucket(table, 0, range(10))
    f = table.pk_file(rows, first_sequence=0)
    assert try_commit(api, table, [table.message(rows[0], newFiles=[f])]).status_code == 201
    response = try_commit(api, table, [table.message(rows[0], newFiles=[f])])
    assert response.status_code == 409
    assert response.json()["conflict"]["type"] == "DUPLICATE_FILE"
    twice = try_commit(
        api,
        table,
        [table.message(rows[0], newFiles=[table.pk_file(rows, first_sequence=5, name="d-x.parquet")] * 2)],
    )
    assert twice.status_code == 409
    assert twice.json()["conflict"]["type"] == "DUPLICATE_FILE"


def test_history_records_every_phase(api: TestClient) -> None:
    table = pk_table(api)
    rows = rows_in_bucket(table, 0, range(10))
    assert (
        try_commit(
            api, table, [table.message(rows[0], newFiles=[table.pk_file(rows, first_sequence=0)])]
        ).status_code
        == 201
    )
    [record] = api.get(f"/tables/{table.id}/commits").json()["commits"]
    assert record["outcome"] == "committed"
    assert {"lockWait", "reconcile", "conflictCheck", "manifestWrite", "commitPoint", "publish"} <= set(
        record["timings"]
    )
    assert all(v >= 0 for v in record["timings"].values())


@pytest.mark.stores("local")  # a timing of the resolution in memory: the store adds nothing to it
def test_validation_is_timed_and_inside_the_total(services: Services) -> None:
    """Resolving the committable against the schema is the validate phase, counted in the total."""
    table = services.tables.create(
        CreateTableRequest(database="db", name="wide", fields=[FieldSpec(name="id", type="BIGINT")])
    )
    # The commit reads each file's footer: a real one-row file of the table's column, under each name.
    sink = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), sink)
    data = sink.getvalue()
    files: list[dict[str, Any]] = [
        {"fileName": f"data-{i}.parquet", "fileSize": len(data), "rowCount": 1} for i in range(3000)
    ]
    bucket = Path(table.location) / "bucket-0"
    bucket.mkdir()
    for f in files:
        (bucket / f["fileName"]).write_bytes(data)
    request = CommitRequest.model_validate(
        {"commitUser": "w", "messages": [{"partition": {}, "bucket": 0, "newFiles": files}]}
    )
    resolving_ms = min(_resolving_ms(request, table.shape) for _ in range(3))  # warm, like the commit's
    timings = services.committer.commit(table.id, request).timings
    assert timings["validate"] >= resolving_ms / 3
    phases = sum(ms for name, ms in timings.items() if name != "total")
    assert phases <= timings["total"] + 0.01


def _resolving_ms(request: CommitRequest, shape: TableShape) -> float:
    started = time.perf_counter()
    resolve_committable(request, shape, now_millis=0)
    return (time.perf_counter() - started) * 1000
