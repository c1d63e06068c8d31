"""`POST .../commit` with bad input: a 4xx ErrorResponse whose message names what is wrong, and nothing
changes, neither the table's files on storage nor its rows in the database.

The table and its first two snapshots come from pypaimon through the REST protocol; each bad request is
the second snapshot (a real one) with one thing broken. Files a broken client would have written before
posting (a garbage manifest list, a manifest naming a missing data file) are written first, and the
storage digest is taken after them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pyarrow as pa
import pytest

from paimon_format.manifest import (
    decode_manifest,
    decode_manifest_list,
    encode_manifest,
    encode_manifest_list,
)
from paimon_format.snapshot import Snapshot
from tests.support.paimon_files import read_bytes, read_text, tree_digest, write_bytes
from tests.support.rest_writers import CATALOG_NAME, create_rest_table, rest_catalog, write_rows
from tests.support.served import LiveServer

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])
AUTH = {"Authorization": "Bearer any-token"}


@dataclasses.dataclass
class Posted:
    """A table with snapshots 1 and 2 (both pypaimon's) and a valid-looking proposal of snapshot 3."""

    http: httpx.Client
    location: str
    table_uuid: str
    head: Snapshot
    proposal: dict[str, Any]

    def path(self, table: str = "bad", database: str = "db") -> str:
        return f"/v1/{CATALOG_NAME}/databases/{database}/tables/{table}/commit"

    def write_manifest_file(self, name: str, data: bytes) -> str:
        write_bytes(f"{self.location}/manifest/{name}", data)
        return name

    def state(self) -> tuple[dict[str, str], Any, list[Any]]:
        table = self.http.get("/tables/db.bad").json()
        commits = self.http.get("/tables/db.bad/commits", params={"limit": 1000}).json()["commits"]
        return tree_digest(self.location), table["latestSnapshotId"], commits


@pytest.fixture
def posted(live_server: LiveServer) -> Iterator[Posted]:
    catalog = rest_catalog(live_server.url)
    table = create_rest_table(catalog, "db.bad", SCHEMA)
    for start in (0, 2):
        write_rows(
            table, pa.Table.from_pylist([{"id": start, "v": "x"}, {"id": start + 1, "v": "y"}], SCHEMA)
        )
    http = httpx.Client(base_url=live_server.url, timeout=60)
    row = http.get("/tables/db.bad").json()
    location = row["location"]
    head = Snapshot.from_json(read_text(f"{location}/snapshot/snapshot-2"))
    first = Snapshot.from_json(read_text(f"{location}/snapshot/snapshot-1"))
    # Snapshot 2 again, re-numbered as 3 on top of 2 by another writer: it fails only where a case breaks
    # it (its delta adds files that are live already, which the conflict rules would catch last).
    proposal = {
        "tableId": row["uuid"],
        "baseSnapshotUuid": head.uuid,
        "snapshot": {
            **json.loads(head.to_json()),
            "id": 3,
            "uuid": "c0ffee00-0000-4000-8000-000000000003",
            "commitUser": "another-writer",  # not a resend of snapshot 2, which would be answered true
        },
        "statistics": [],
    }
    assert first.uuid != head.uuid
    try:
        yield Posted(http, location, row["uuid"], head, proposal)
    finally:
        http.close()


Breaker = Callable[[Posted], tuple[str, Any]]
"""Makes one bad request: (path, body); a str body is sent as raw bytes."""


def snapshot_with(**changes: Any) -> Breaker:
    def make(p: Posted) -> tuple[str, Any]:
        return p.path(), {**p.proposal, "snapshot": {**p.proposal["snapshot"], **changes}}

    return make


def body_with(**changes: Any) -> Breaker:
    return lambda p: (p.path(), {**p.proposal, **changes})


def without_snapshot_key(key: str) -> Breaker:
    def make(p: Posted) -> tuple[str, Any]:
        snapshot = {k: v for k, v in p.proposal["snapshot"].items() if k != key}
        return p.path(), {**p.proposal, "snapshot": snapshot}

    return make


def garbage_delta_list(p: Posted) -> tuple[str, Any]:
    name = p.write_manifest_file("manifest-list-garbage-0", b"not avro at all")
    return snapshot_with(deltaManifestList=name)(p)


def delta_naming_a_missing_file(p: Posted) -> tuple[str, Any]:
    metas = decode_manifest_list(read_bytes(f"{p.location}/manifest/{p.head.delta_manifest_list}"))
    entries = decode_manifest(read_bytes(f"{p.location}/manifest/{metas[0].file_name}"))
    renamed = [
        dataclasses.replace(e, file=dataclasses.replace(e.file, file_name=f"data-missing-{i}.parquet"))
        for i, e in enumerate(entries)
    ]
    manifest = p.write_manifest_file("manifest-missing-files-0", encode_manifest(renamed))
    meta = dataclasses.replace(metas[0], file_name=manifest, file_size=len(encode_manifest(renamed)))
    name = p.write_manifest_file("manifest-list-missing-files-0", encode_manifest_list([meta]))
    return snapshot_with(deltaManifestList=name)(p)


def base_without_the_live_files(p: Posted) -> tuple[str, Any]:
    empty = p.write_manifest_file("manifest-list-empty-0", encode_manifest_list([]))
    return snapshot_with(baseManifestList=empty, deltaManifestList=empty)(p)


CASES: dict[str, tuple[Breaker, int, str]] = {
    # name: (the bad request, status, words the message must hold)
    "body is not JSON": (lambda p: (p.path(), "{not json"), 400, ""),
    "body is a JSON array": (lambda p: (p.path(), "[]"), 400, ""),
    "no snapshot": (
        lambda p: (p.path(), {k: v for k, v in p.proposal.items() if k != "snapshot"}),
        400,
        "snapshot",
    ),
    "snapshot is a string": (body_with(snapshot="snapshot-3"), 400, "snapshot"),
    "snapshot lacks its id": (without_snapshot_key("id"), 400, "id"),
    "snapshot lacks commitKind": (without_snapshot_key("commitKind"), 400, "commitKind"),
    "id is a string": (snapshot_with(id="3"), 400, "id"),
    "id is zero": (snapshot_with(id=0), 400, "snapshot.id"),
    "unknown commit kind": (snapshot_with(commitKind="MERGE"), 400, "commitKind"),
    "ANALYZE snapshot": (snapshot_with(commitKind="ANALYZE"), 400, "commitKind"),
    "schema that does not exist": (snapshot_with(schemaId=7), 400, "schemaId"),
    "commitUser too long": (snapshot_with(commitUser="u" * 500), 400, "commitUser"),
    "snapshot of another table's uuid": (
        body_with(tableId="0a0a0a0a-0000-4000-8000-000000000000"),
        404,
        "uuid",
    ),
    "tableId is a number": (body_with(tableId=42), 400, "tableId"),
    "baseSnapshotUuid is a number": (body_with(baseSnapshotUuid=7), 400, "baseSnapshotUuid"),
    "statistics is not a list": (body_with(statistics={"spec": {}}), 400, "statistics"),
    "base manifest list not on storage": (
        snapshot_with(baseManifestList="manifest-list-gone-0"),
        400,
        "baseManifestList",
    ),
    "delta manifest list not on storage": (
        snapshot_with(deltaManifestList="manifest-list-gone-1"),
        400,
        "deltaManifestList",
    ),
    "delta manifest list outside the table": (
        snapshot_with(deltaManifestList="../../escape"),
        400,
        "deltaManifestList",
    ),
    "delta manifest list is not Avro": (garbage_delta_list, 400, "deltaManifestList"),
    "delta names data files not on storage": (delta_naming_a_missing_file, 400, "data-missing-0.parquet"),
    "base without the table's live files": (base_without_the_live_files, 400, "baseManifestList"),
    "table that does not exist": (lambda p: (p.path(table="nope"), p.proposal), 404, "nope"),
    "database that does not exist": (lambda p: (p.path(database="nodb"), p.proposal), 404, "nodb"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_commit_is_refused_and_changes_nothing(posted: Posted, case: str) -> None:
    breaker, status, named = CASES[case]
    path, body = breaker(posted)
    before = posted.state()
    if isinstance(body, str):
        response = posted.http.post(path, content=body, headers={**AUTH, "Content-Type": "application/json"})
    else:
        response = posted.http.post(path, json=body, headers=AUTH)
    assert response.status_code == status, response.text
    error = response.json()
    assert error["code"] == status
    assert set(error) >= {"message", "resourceType", "code"}
    assert named in error["message"], error["message"]
    assert posted.state() == before
