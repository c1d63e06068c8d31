"""Service behaviour over HTTP: lock timeouts, outcomes by Idempotency-Key, registering pypaimon tables."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
from fastapi.testclient import TestClient

from coordinator.app import create_app
from coordinator.settings import Settings
from coordinator_client.models import FileListResponse, KeyStatsModel
from tests.support.commits import append_commit
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows, sorted_rows


def _body(table: PaimonTable, user: str, ident: int, row: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return append_commit(table, [row], user=user, identifier=ident, **extra)


def test_lock_held_past_the_acquire_timeout_is_a_503_with_retry_after(settings: Settings) -> None:
    impatient = settings.model_copy(update={"lock_acquire_timeout_seconds": 0.3})
    with TestClient(create_app(impatient)) as api:
        table = create_table(api, "db", "t", {"id": "BIGINT"})
        services = api.app.state.services
        lease = services.locks.acquire(f"table:{table.id}", "a-long-compaction", timeout_seconds=1)
        body = _body(table, "w", 1, {"id": 1})
        before = sorted(p.name for p in table.path.rglob("*"))
        response = api.post(f"/tables/{table.id}/commits", json=body)
        assert response.status_code == 503
        assert int(response.headers["Retry-After"]) >= 1
        assert response.json()["code"] == "LOCK_UNAVAILABLE"
        assert sorted(p.name for p in table.path.rglob("*")) == before
        held = api.get("/locks").json()["locks"]
        assert [(lock["lockId"], lock["owner"], lock["epoch"]) for lock in held] == [
            (f"table:{table.id}", "a-long-compaction", lease.epoch)
        ]
        services.locks.release(lease)
        assert api.post(f"/tables/{table.id}/commits", json=body).status_code == 201


def test_outcome_by_idempotency_key_ignores_an_earlier_retryable_rejection(api: TestClient) -> None:
    table = create_table(api, "db", "t", {"id": "BIGINT"})
    assert (
        api.post(f"/tables/{table.id}/commits", json=_body(table, "other", 1, {"id": 0})).status_code == 201
    )
    stale = api.post(
        f"/tables/{table.id}/commits",
        json=_body(table, "s", 5, {"id": 1}, baseSnapshotId=0),
        headers={"Idempotency-Key": "first-try"},
    )
    assert stale.status_code == 409
    assert stale.json()["conflict"]["retryable"] is True
    url = f"/tables/{table.id}/commits/s/5"
    assert api.get(url).json()["status"] == "rejected"
    # The retry of the same identifier gets a new key; until it lands, that key's outcome is unknown.
    retry_key = str(uuid.uuid4())
    assert api.get(url, params={"idempotencyKey": retry_key}).json()["status"] == "unknown"
    retry = api.post(
        f"/tables/{table.id}/commits",
        json=_body(table, "s", 5, {"id": 1}),
        headers={"Idempotency-Key": retry_key},
    )
    assert retry.status_code == 201
    outcome = api.get(url, params={"idempotencyKey": retry_key}).json()
    assert outcome["status"] == "committed"
    assert outcome["snapshots"] == retry.json()["snapshots"]


def test_register_a_table_pypaimon_created(api: TestClient, warehouse: Path) -> None:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("legacy", False)
    arrow_schema = pa.schema([("dt", pa.string()), ("id", pa.int64())])
    catalog.create_table("legacy.t", Schema.from_pyarrow_schema(arrow_schema, partition_keys=["dt"]), False)
    outside = catalog.get_table("legacy.t")
    builder = outside.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(pa.Table.from_pylist([{"dt": "a", "id": 1}], schema=arrow_schema))
    builder.new_commit().commit(write.prepare_commit())
    write.close()

    response = api.post(
        "/tables", json={"database": "legacy", "name": "t", "location": str(warehouse / "legacy.db" / "t")}
    )
    assert response.status_code == 201, response.text
    assert response.json()["latestSnapshotId"] == 1
    table = PaimonTable(response.json())
    committed = api.post(f"/tables/{table.id}/commits", json=_body(table, "ours", 1, {"dt": "b", "id": 2}))
    assert committed.json()["snapshots"] == [{"id": 2, "commitKind": "APPEND"}]
    assert pypaimon_rows(warehouse, "legacy.t") == sorted_rows([{"dt": "a", "id": 1}, {"dt": "b", "id": 2}])
    again = api.post("/tables", json={"database": "legacy", "name": "t", "location": str(table.location)})
    assert again.status_code == 409
    nowhere = api.post(
        "/tables", json={"database": "legacy", "name": "u", "location": str(warehouse / "none")}
    )
    assert nowhere.status_code == 422
    assert nowhere.json()["field"] == "location"


def test_snapshots_and_live_files_by_partition(api: TestClient) -> None:
    table = create_table(api, "db", "p", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"])
    assert api.get(f"/tables/{table.id}/files").json() == {"snapshotId": None, "files": []}
    assert api.get(f"/tables/{table.id}/snapshots/latest").status_code == 404
    for i, dt in enumerate(["a", "b", "a"]):
        assert (
            api.post(
                f"/tables/{table.id}/commits", json=_body(table, f"j{i}", 1, {"dt": dt, "id": i})
            ).status_code
            == 201
        )
    only_a = api.get(f"/tables/{table.id}/files", params={"partition": '{"dt": "a"}'}).json()
    assert only_a["snapshotId"] == 3
    assert sorted(f["partition"]["dt"] for f in only_a["files"]) == ["a", "a"]
    assert all(Path(f["path"]).exists() for f in only_a["files"])
    at_two = api.get(f"/tables/{table.id}/files", params={"snapshot": 2}).json()
    assert sorted(f["partition"]["dt"] for f in at_two["files"]) == ["a", "b"]
    listed = api.get(f"/tables/{table.id}/snapshots", params={"limit": 2}).json()["snapshots"]
    assert [s["id"] for s in listed] == [3, 2]
    assert api.get(f"/tables/{table.id}/snapshots/1").json()["commitUser"] == "j0"
    assert api.get(f"/tables/{table.id}/snapshots/9").status_code == 404
    bad = api.get(f"/tables/{table.id}/files", params={"partition": '{"region": "x"}'})
    assert bad.status_code == 422
    assert bad.json()["field"] == "partition"


def test_live_files_carry_what_a_compaction_must_name(api: TestClient) -> None:
    """A live file turned back into a DataFile (LiveFileModel.to_data_file) repeats what its commit sent,
    key statistics of a two-field key included, so a compaction can name it in compactBefore."""
    fields = {"a": "INT NOT NULL", "b": "STRING NOT NULL", "v": "STRING"}
    table = create_table(api, "db", "kv", fields, primaryKeys=["a", "b"], options={"bucket": "1"})
    rows = [{"a": 1, "b": "z", "v": "x"}, {"a": 2, "b": "c", "v": "y"}]
    sent = table.pk_file(rows, first_sequence=0)
    sent["keyStats"] = {"minValues": [1, "c"], "maxValues": [2, "z"], "nullCounts": [0, 0]}
    body = {"commitUser": "w", "messages": [table.message(rows[0], newFiles=[sent])]}
    assert api.post(f"/tables/{table.id}/commits", json=body).status_code == 201

    [live] = FileListResponse.model_validate(api.get(f"/tables/{table.id}/files").json()).files
    named = live.to_data_file()
    assert named.key_stats == KeyStatsModel(min_values=[1, "c"], max_values=[2, "z"], null_counts=[0, 0])
    assert (named.file_name, named.min_key, named.max_key) == (sent["fileName"], [1, "z"], [2, "c"])
    assert (named.min_sequence_number, named.max_sequence_number, named.file_source) == (0, 1, 0)
    after = {**table.pk_file(rows, first_sequence=0, level=5), "keyStats": sent["keyStats"]}
    compaction = {
        "commitUser": "compactor",
        "messages": [
            table.message(
                rows[0],
                compactBefore=[named.model_dump(by_alias=True)],
                compactAfter=[after],
            )
        ],
    }
    answer = api.post(f"/tables/{table.id}/commits", json=compaction)
    assert answer.status_code == 201, answer.text
    assert answer.json()["snapshots"] == [{"id": 2, "commitKind": "COMPACT"}]
    assert [f["level"] for f in api.get(f"/tables/{table.id}/files").json()["files"]] == [5]


def test_a_commit_that_makes_no_snapshot_is_recorded_and_answered(api: TestClient) -> None:
    """A streaming checkpoint with no data, or an overwrite of an empty partition, makes no snapshot."""
    body = {
        "database": "db",
        "name": "quiet",
        "fields": [{"name": "dt", "type": "STRING"}, {"name": "id", "type": "BIGINT"}],
        "partitionKeys": ["dt"],
    }
    assert api.post("/tables", json=body).status_code == 201
    overwrites: list[dict[str, Any]] = [
        {},
        {"overwrite": {"mode": "static", "partition": {"dt": "b"}}},
        {"overwrite": {"mode": "table"}},
    ]
    for identifier, extra in enumerate(overwrites):
        request = {"commitUser": "stream", "identifier": identifier, "messages": [], **extra}
        response = api.post("/tables/db.quiet/commits", json=request)
        assert response.status_code == 201, response.text
        assert response.json()["snapshots"] == []
        outcome = api.get(f"/tables/db.quiet/commits/stream/{identifier}").json()
        assert outcome["status"] == "committed"
    assert api.get("/tables/db.quiet").json()["latestSnapshotId"] is None
