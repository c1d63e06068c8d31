"""A folder purged by a drop is free again, on local disk and on S3 (SeaweedFS keeps directory entries
after their objects are deleted: an entry is not a table). What makes a folder a Paimon table is a schema
file, and a folder holding one is still refused."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from tests.support.commits import commit, new_file
from tests.support.paimon_files import (
    create_table,
    file_names,
    pk_table,
    pypaimon_rows,
    rows_in_bucket,
    tree_digest,
    write_bytes,
)

STORES = ("local", "s3")


def test_a_table_dropped_with_purge_can_be_created_again(api: TestClient, warehouse_location: str) -> None:
    first = pk_table(api)
    commit(api, first, new_file(first, rows_in_bucket(first, 0, range(10))))
    assert tree_digest(first.location) != {}
    assert api.delete(f"/tables/{first.id}", params={"purge": "true"}).status_code == 204
    assert tree_digest(first.location) == {}  # no object left under the folder

    again = pk_table(api)  # asserts 201
    assert again.location == first.location
    assert file_names(f"{again.location}/schema") == ["schema-0"]
    assert api.get(f"/tables/{again.id}").json()["latestSnapshotId"] is None
    rows = rows_in_bucket(again, 1, range(20, 25))
    commit(api, again, new_file(again, rows))
    assert sorted(r["id"] for r in pypaimon_rows(warehouse_location, again.id)) == [r["id"] for r in rows]


def test_only_a_schema_file_makes_a_folder_hold_a_table(
    api: TestClient, store: str, warehouse_location: str
) -> None:
    location = f"{warehouse_location}/db.db/t"
    if store == "local":
        (Path(location) / "schema").mkdir(parents=True)  # an empty folder is not a table
        (Path(location) / "snapshot").mkdir()
    write_bytes(f"{location}/schema/.schema-0.tmp", b"{}")  # nor is a writer's temp file
    create_table(api, "db", "t", {"id": "BIGINT"})
    assert api.delete("/tables/db.t", params={"purge": "true"}).status_code == 204

    write_bytes(f"{location}/schema/schema-0", b"{}")  # a table another writer made here
    before = tree_digest(location)
    refused = api.post(
        "/tables", json={"database": "db", "name": "t", "fields": [{"name": "id", "type": "INT"}]}
    )
    assert refused.status_code == 409, refused.text
    assert "already holds a Paimon table" in refused.json()["message"]
    assert tree_digest(location) == before
    assert api.get("/tables").json()["tables"] == []
