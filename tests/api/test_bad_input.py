"""Malformed requests get a 4xx that names the problem, and change nothing on storage or in the database."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from coordinator.settings import Settings
from tests.support.databases import database_digest
from tests.support.paimon_files import PaimonTable, pk_table, tree_digest

Mutation = Callable[[dict[str, Any]], None]


def _file(body: dict[str, Any]) -> dict[str, Any]:
    f: dict[str, Any] = body["messages"][0]["newFiles"][0]
    return f


def _set(path: str, value: Any) -> Mutation:
    def mutate(body: dict[str, Any]) -> None:
        target: Any = body
        parts = path.split(".")
        for part in parts[:-1]:
            target = target[int(part)] if part.isdigit() else target[part]
        target[parts[-1]] = value

    return mutate


def _delete(path: str) -> Mutation:
    def mutate(body: dict[str, Any]) -> None:
        target: Any = body
        parts = path.split(".")
        for part in parts[:-1]:
            target = target[int(part)] if part.isdigit() else target[part]
        del target[parts[-1]]

    return mutate


F = "messages.0.newFiles.0"
CASES: list[tuple[str, Mutation, int, str | None]] = [
    ("bucket out of range", _set("messages.0.bucket", 2), 422, "messages[0].bucket"),
    ("negative bucket", _set("messages.0.bucket", -1), 422, "messages[0].bucket"),
    ("zero total buckets", _set("messages.0.totalBuckets", 0), 422, "messages[0].totalBuckets"),
    (
        "path traversal in file name",
        _set(f"{F}.fileName", "../../escape.parquet"),
        422,
        "messages[0].newFiles[0].fileName",
    ),
    ("slash in file name", _set(f"{F}.fileName", "dt=b/x.parquet"), 422, "messages[0].newFiles[0].fileName"),
    ("hidden file name", _set(f"{F}.fileName", ".x.parquet"), 422, "messages[0].newFiles[0].fileName"),
    ("not a data file", _set(f"{F}.fileName", "data-1.csv"), 422, "messages[0].newFiles[0].fileName"),
    ("negative size", _set(f"{F}.fileSize", -1), 422, "messages[0].newFiles[0].fileSize"),
    ("negative row count", _set(f"{F}.rowCount", -5), 422, "messages[0].newFiles[0].rowCount"),
    ("wrong key arity", _set(f"{F}.minKey", [1, 2]), 422, "messages[0].newFiles[0].minKey"),
    ("key of the wrong type", _set(f"{F}.maxKey", ["nine"]), 422, "messages[0].newFiles[0].maxKey[0]"),
    ("min key above max key", _set(f"{F}.minKey", [10**6]), 422, "messages[0].newFiles[0].minKey"),
    (
        "partition value of the wrong type",
        _set("messages.0.partition.dt", 20240101),
        422,
        "messages[0].partition.dt",
    ),
    ("unknown partition key", _set("messages.0.partition.region", "eu"), 422, "messages[0].partition.region"),
    ("missing partition key", _set("messages.0.partition", {}), 422, "messages[0].partition.dt"),
    ("missing commitUser", _delete("commitUser"), 422, "commitUser"),
    ("empty commitUser", _set("commitUser", ""), 422, "commitUser"),
    ("identifier not an integer", _set("identifier", "abc"), 422, "identifier"),
    ("identifier beyond int64", _set("identifier", 2**64), 422, "identifier"),
    ("unknown field", _set("mesages", []), 422, "mesages"),
    (
        "sequence range reversed",
        _set(f"{F}.minSequenceNumber", 99),
        422,
        "messages[0].newFiles[0].minSequenceNumber",
    ),
    (
        "more deleted rows than rows",
        _set(f"{F}.deleteRowCount", 99),
        422,
        "messages[0].newFiles[0].deleteRowCount",
    ),
    ("level above the top level", _set(f"{F}.level", 9), 422, "messages[0].newFiles[0].level"),
    ("schema that does not exist", _set(f"{F}.schemaId", 3), 422, "messages[0].newFiles[0].schemaId"),
    (
        "key stats of the wrong arity",
        _set(f"{F}.keyStats", {"minValues": [], "maxValues": [], "nullCounts": []}),
        422,
        "messages[0].newFiles[0].keyStats",
    ),
    (
        "extra file with a path",
        _set(f"{F}.extraFiles", ["../x.index"]),
        422,
        "messages[0].newFiles[0].extraFiles[0]",
    ),
    (
        "extra file with a NUL, a control character or a backslash",
        _set(f"{F}.extraFiles", ["x.index", "a\x00b", "a\x1fb", "a\\b"]),
        422,
        "messages[0].newFiles[0].extraFiles[1]",
    ),
    (
        "static overwrite of an unknown key",
        _set("overwrite", {"mode": "static", "partition": {"nope": 1}}),
        422,
        "overwrite.partition.nope",
    ),
    (
        "static overwrite not covering the new files",
        _set("overwrite", {"mode": "static", "partition": {"dt": "b"}}),
        422,
        "overwrite.partition",
    ),
    ("unknown overwrite mode", _set("overwrite", {"mode": "everything"}), 422, "overwrite.mode"),
    ("negative base snapshot", _set("baseSnapshotId", -1), 422, "baseSnapshotId"),
    ("base snapshot beyond int64", _set("baseSnapshotId", 2**63), 422, "baseSnapshotId"),
    ("file size beyond int64", _set(f"{F}.fileSize", 2**64), 422, "messages[0].newFiles[0].fileSize"),
    ("row count beyond int64", _set(f"{F}.rowCount", 2**63), 422, "messages[0].newFiles[0].rowCount"),
    (
        "creation time beyond int64",
        _set(f"{F}.creationTime", -(2**63) - 1),
        422,
        "messages[0].newFiles[0].creationTime",
    ),
    ("watermark beyond int64", _set("watermark", 2**63), 422, "watermark"),
    ("NUL in a property", _set("properties", {"k": "v\x00"}), 422, "properties.k"),
    ("control character in commitUser", _set("commitUser", "job\x85"), 422, "commitUser"),
]


@pytest.fixture
def table(api: TestClient) -> PaimonTable:
    return pk_table(api)


def _valid_body(table: PaimonTable) -> dict[str, Any]:
    rows = [{"dt": "a", "id": i, "v": "x"} for i in range(50) if table.bucket({"dt": "a", "id": i}) == 0]
    return {
        "commitUser": "job-1",
        "identifier": 1,
        "messages": [table.message(rows[0], newFiles=[table.pk_file(rows, first_sequence=0)])],
    }


def test_malformed_commits_are_rejected_without_side_effects(api: TestClient, table: PaimonTable) -> None:
    valid = _valid_body(table)
    before = tree_digest(table.location)
    for name, mutate, status, field in CASES:
        body = copy.deepcopy(valid)
        mutate(body)
        response = api.post(f"/tables/{table.id}/commits", json=body)
        assert response.status_code == status, (name, response.text)
        error = response.json()
        assert error["code"] == "INVALID_REQUEST", name
        assert error["field"] == field, (name, error)
        assert error["message"], name
    assert tree_digest(table.location) == before
    assert api.get(f"/tables/{table.id}/commits").json()["commits"] == []
    # The untouched body is fine: the cases above failed for their one defect.
    assert api.post(f"/tables/{table.id}/commits", json=valid).status_code == 201


def test_unknown_table_and_broken_json(api: TestClient, table: PaimonTable) -> None:
    valid = _valid_body(table)
    before = tree_digest(table.location)
    missing = api.post("/tables/sales.nope/commits", json=valid)
    assert missing.status_code == 404
    assert missing.json()["code"] == "TABLE_NOT_FOUND"
    assert "sales.nope" in missing.json()["message"]
    broken = api.post(
        f"/tables/{table.id}/commits", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert broken.status_code == 422
    assert tree_digest(table.location) == before


def test_oversized_body(settings: Settings, table: PaimonTable) -> None:
    from coordinator.app import create_app

    small = settings.model_copy(update={"max_body_bytes": 2048})
    with TestClient(create_app(small)) as api:
        body = _valid_body(table)
        body["properties"] = {"padding": "x" * 4096}
        before = tree_digest(table.location)
        response = api.post(
            f"/tables/{table.id}/commits",
            content=json.dumps(body),
            headers={"content-type": "application/json"},
        )
        assert response.status_code == 413
        assert response.json()["field"] == "body"
        assert tree_digest(table.location) == before


def test_oversized_streamed_body(settings: Settings, table: PaimonTable) -> None:
    """A chunked body declares no length; it is cut off at the limit as it is read."""
    from coordinator.app import create_app

    small = settings.model_copy(update={"max_body_bytes": 2048})
    with TestClient(create_app(small)) as api:
        body = _valid_body(table)
        body["properties"] = {"padding": "x" * 4096}
        data = json.dumps(body).encode()
        before = tree_digest(table.location)
        response = api.post(
            f"/tables/{table.id}/commits",
            content=(data[i : i + 1024] for i in range(0, len(data), 1024)),
            headers={"content-type": "application/json"},
        )
        assert response.status_code == 413
        assert response.json()["field"] == "body"
        assert tree_digest(table.location) == before


TABLE_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("unknown type", {"fields": [{"name": "a", "type": "WIDGET"}]}, "fields[0].type"),
    (
        "duplicate field",
        {"fields": [{"name": "a", "type": "INT"}, {"name": "a", "type": "INT"}]},
        "fields[1].name",
    ),
    ("partition key not a field", {"partitionKeys": ["zz"]}, "partitionKeys[0]"),
    (
        "primary key without the partition key",
        {"partitionKeys": ["dt"], "primaryKeys": ["id"], "options": {"bucket": "2"}},
        "primaryKeys",
    ),
    ("primary-key table without fixed buckets", {"primaryKeys": ["id"]}, "options.bucket"),
    ("bad bucket", {"options": {"bucket": "many"}}, "options.bucket"),
    (
        "retention kept below one snapshot",
        {"options": {"snapshot.num-retained.min": "0"}},
        "options.snapshot.num-retained.min",
    ),
    (
        "retention time not a duration",
        {"options": {"snapshot.time-retained": "forever"}},
        "options.snapshot.time-retained",
    ),
    ("name with a path", {"name": "../etc"}, "name"),
    ("database with a dot", {"database": "a.b"}, "database"),
    ("NUL in the comment", {"comment": "c\x00"}, "comment"),
    ("NUL in an option", {"options": {"k": "v\x00"}}, "options.k"),
    (
        "NUL in a field description",
        {"fields": [{"name": "a", "type": "INT", "description": "\x00"}]},
        "fields[0].description",
    ),
    ("NUL in the location", {"location": "/tmp/t\x00", "fields": None}, "location"),
    ("no fields", {"fields": []}, "fields"),
]


def test_malformed_table_definitions(api: TestClient, warehouse: Any) -> None:
    base = {
        "database": "db",
        "name": "t",
        "fields": [{"name": "dt", "type": "STRING"}, {"name": "id", "type": "BIGINT"}],
    }
    for name, change, field in TABLE_CASES:
        response = api.post("/tables", json={**base, **change})
        assert response.status_code == 422, (name, response.text)
        assert response.json()["field"] == field, (name, response.json())
    assert list(warehouse.rglob("*")) == []
    assert api.get("/tables").json()["tables"] == []


MAINTENANCE_CASES: list[tuple[str, str, str, dict[str, Any], str]] = [
    ("NUL in an option value", "PATCH", "options", {"set": {"k": "v\x00"}}, "set.k"),
    ("NUL in a removed option", "PATCH", "options", {"remove": ["k\x00"]}, "remove[0]"),
    ("tag of a snapshot beyond int64", "POST", "tags", {"name": "t", "snapshotId": 2**63}, "snapshotId"),
    ("rollback beyond int64", "POST", "rollback", {"snapshotId": 2**63}, "snapshotId"),
    ("consumer beyond int64", "PUT", "consumers/c", {"nextSnapshotId": 2**63}, "nextSnapshotId"),
    (
        "orphans older than forever",
        "POST",
        "orphans/clean",
        {"olderThanSeconds": "Infinity"},
        "olderThanSeconds",
    ),
]
"""Maintenance bodies: what would reach BIGINT or JSONB columns (PostgreSQL refuses NUL) is refused first."""


def test_malformed_maintenance_requests(api: TestClient, table: PaimonTable, database_url: str) -> None:
    before = (database_digest(api, database_url), tree_digest(table.location))
    for name, method, path, body, field in MAINTENANCE_CASES:
        response = api.request(method, f"/tables/{table.id}/{path}", json=body)
        assert response.status_code == 422, (name, response.text)
        assert response.json()["code"] == "INVALID_REQUEST", name
        assert response.json()["field"] == field, (name, response.json())
    # The caller's name is recorded in the history and the audit log: no control character gets there.
    named = api.post(f"/tables/{table.id}/expire", headers={"X-Coordinator-User": "ops\x7fbot"})
    assert named.status_code == 422, named.text
    assert named.json()["field"] == "X-Coordinator-User"
    assert (database_digest(api, database_url), tree_digest(table.location)) == before
