"""Every path a writer sends stays inside its table (issue 29, item 1), replayed against a real server.

Two tables written by pypaimon through the REST catalog, `a.t1` (partitioned by dt) and `b.t2`. A
writer of `a.t1` crafts snapshots whose manifests name `b.t2`'s files by a path that climbs out of
`a.t1`'s folder; before the guard the coordinator answered `success: true`, listed the file as
`a.t1`'s, and a rollback of `a.t1` deleted it. Each test first shows the file the attack aims at (it
exists, and pypaimon reads `b.t2`), then that the attack is refused with a 4xx naming the entry, that
no file of any table changed (byte for byte), and that pypaimon still reads `b.t2`.
"""

from __future__ import annotations

import dataclasses
import io
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import fastavro
import httpx
import pyarrow as pa
import pytest

from paimon_format.manifest import FileKind, ManifestEntry
from tests.support.hostile_snapshots import AUTH, RestTable, renamed
from tests.support.paimon_files import PaimonTable, file_exists, tree_digest, write_bytes
from tests.support.rest_writers import CATALOG_NAME, create_rest_table, read_rows, rest_catalog, write_rows
from tests.support.served import LiveServer

STORES = ("local", "s3")

ROWS = pa.schema([pa.field("dt", pa.string()), pa.field("id", pa.int64())])


@dataclasses.dataclass
class TwoTables:
    http: httpx.Client
    catalog: Any
    a: RestTable
    b: RestTable
    warehouse: str
    victim: str
    """b.t2's data file, as a path relative to a.t1's bucket folder `dt=x/bucket-0`."""
    victim_location: str
    victim_manifest: str
    """b.t2's delta manifest, relative to a.t1's `manifest/` folder."""

    def b_rows(self) -> list[dict[str, Any]]:
        return read_rows(self.catalog.get_table("b.t2"))

    def files_of_a(self) -> list[str]:
        response = self.http.get("/tables/a.t1/files")
        assert response.status_code == 200, response.text
        return [f["path"] for f in response.json()["files"]]


@pytest.fixture
def two(live_server: LiveServer) -> Iterator[TwoTables]:
    # A token of its own: pypaimon caches storage credentials per token and table name for the process,
    # and a table-scoped credential of an earlier test's a.t1 opens nothing of this one's.
    catalog = rest_catalog(live_server.url, token=f"writer-{uuid.uuid4()}")
    for table_id in ("a.t1", "b.t2"):
        keys = ["dt"] if table_id == "a.t1" else []
        table = create_rest_table(catalog, table_id, ROWS, partition_keys=keys)
        write_rows(table, pa.Table.from_pylist([{"dt": "x", "id": 1}, {"dt": "x", "id": 2}], ROWS))
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        a, b = RestTable.of(http, "a.t1"), RestTable.of(http, "b.t2")
        (victim,) = b.head_entries()
        (manifest,) = b.metas(b.snapshot().delta_manifest_list)
        warehouse = a.location.rsplit("/", 2)[0]
        assert b.location == f"{warehouse}/b.db/t2"
        yield TwoTables(
            http,
            catalog,
            a,
            b,
            warehouse,
            victim=f"../../../../b.db/t2/bucket-0/{victim.file.file_name}",
            victim_location=f"{b.location}/bucket-0/{victim.file.file_name}",
            victim_manifest=f"../../../b.db/t2/manifest/{manifest.file_name}",
        )


def _entry(two: TwoTables, **file: Any) -> ManifestEntry:
    """An ADD of a new file in a.t1's partition dt=x (a real entry of its head, renamed)."""
    (head,) = two.a.head_entries()
    entry = renamed(head, f"data-{uuid.uuid4()}-0.parquet")
    return dataclasses.replace(entry, file=dataclasses.replace(entry.file, **file))


def _delta_with(two: TwoTables, entry: ManifestEntry) -> dict[str, Any]:
    meta = two.a.manifest([entry], f"manifest-{uuid.uuid4()}-0")
    return two.a.proposal(delta=two.a.manifest_list([meta], f"manifest-list-{uuid.uuid4()}-1"))


Attack = Callable[[TwoTables], dict[str, Any]]


def data_file(two: TwoTables) -> dict[str, Any]:
    return _delta_with(two, renamed(_entry(two), two.victim))


def extra_file(two: TwoTables) -> dict[str, Any]:
    return _delta_with(two, _entry(two, extra_files=("data.index", two.victim)))


def external_path(two: TwoTables) -> dict[str, Any]:
    # a.t1 sets no data-file.external-paths: no external path at all, least of all b.t2's file.
    return _delta_with(two, _entry(two, external_path=two.victim_location))


def delta_manifest(two: TwoTables) -> dict[str, Any]:
    (meta,) = two.b.metas(two.b.snapshot().delta_manifest_list)
    hostile = dataclasses.replace(meta, file_name=two.victim_manifest)
    return two.a.proposal(delta=two.a.manifest_list([hostile], f"manifest-list-{uuid.uuid4()}-1"))


def base_manifest(two: TwoTables) -> dict[str, Any]:
    (meta,) = two.b.metas(two.b.snapshot().delta_manifest_list)
    base = [*two.a.head_manifests(), dataclasses.replace(meta, file_name=two.victim_manifest)]
    empty = two.a.manifest_list([], f"manifest-list-{uuid.uuid4()}-1")
    return two.a.proposal(base=two.a.manifest_list(base, f"manifest-list-{uuid.uuid4()}-0"), delta=empty)


def delta_list(two: TwoTables) -> dict[str, Any]:
    return two.a.proposal(delta=f"../../../b.db/t2/manifest/{two.b.snapshot().delta_manifest_list}")


def changelog_list(two: TwoTables) -> dict[str, Any]:
    body = _delta_with(two, _entry(two))
    b_list = f"../../../b.db/t2/manifest/{two.b.snapshot().delta_manifest_list}"
    body["snapshot"]["changelogManifestList"] = b_list
    return body


def index_manifest(two: TwoTables) -> dict[str, Any]:
    body = _delta_with(two, _entry(two))
    body["snapshot"]["indexManifest"] = two.victim_manifest
    return body


INDEX_MANIFEST = fastavro.parse_schema(
    {
        "type": "record",
        "name": "record",
        "fields": [
            {"name": "_VERSION", "type": "int"},
            {"name": "_KIND", "type": "int"},
            {"name": "_PARTITION", "type": "bytes"},
            {"name": "_BUCKET", "type": "int"},
            {"name": "_INDEX_TYPE", "type": "string"},
            {"name": "_FILE_NAME", "type": "string"},
            {"name": "_FILE_SIZE", "type": "long"},
            {"name": "_ROW_COUNT", "type": "long"},
            {
                "name": "_DELETIONS_VECTORS_RANGES",
                "type": [
                    "null",
                    {
                        "type": "array",
                        "items": {
                            "type": "record",
                            "name": "range",
                            "fields": [
                                {"name": "f0", "type": "string"},
                                {"name": "f1", "type": "int"},
                                {"name": "f2", "type": "int"},
                            ],
                        },
                    },
                ],
                "default": None,
            },
            {"name": "_EXTERNAL_PATH", "type": ["null", "string"], "default": None},
        ],
    }
)
"""Paimon's index manifest record (paimon-format.md §4), as a Java writer with deletion vectors writes it."""


def _index_entry(two: TwoTables, **record: Any) -> dict[str, Any]:
    """A proposal whose new index manifest holds one deletion-vector index file of a.t1's dt=x."""
    (entry,) = two.a.head_entries()
    data = {
        "_VERSION": 1,
        "_KIND": 0,
        "_PARTITION": entry.partition,
        "_BUCKET": 0,
        "_INDEX_TYPE": "DELETION_VECTORS",
        "_FILE_NAME": f"index-{uuid.uuid4()}-0",
        "_FILE_SIZE": 10,
        "_ROW_COUNT": 1,
        "_DELETIONS_VECTORS_RANGES": [{"f0": entry.file.file_name, "f1": 0, "f2": 10}],
        **record,
    }
    out = io.BytesIO()
    fastavro.writer(out, INDEX_MANIFEST, [data])
    body = _delta_with(two, _entry(two))
    body["snapshot"]["indexManifest"] = two.a.write_file(f"index-manifest-{uuid.uuid4()}-0", out.getvalue())
    return body


def index_file(two: TwoTables) -> dict[str, Any]:
    return _index_entry(two, _FILE_NAME=f"../../../b.db/t2/index/{uuid.uuid4()}")


def index_external_path(two: TwoTables) -> dict[str, Any]:
    return _index_entry(two, _EXTERNAL_PATH=two.victim_location)


def deletion_vector_file(two: TwoTables) -> dict[str, Any]:
    return _index_entry(two, _DELETIONS_VECTORS_RANGES=[{"f0": two.victim, "f1": 0, "f2": 10}])


def statistics(two: TwoTables) -> dict[str, Any]:
    body = _delta_with(two, _entry(two))
    body["snapshot"]["statistics"] = "../../b.db/t2/statistics/stat-0"
    return body


ATTACKS: dict[str, tuple[Attack, str]] = {
    # where the climbing path hides: (the proposal, the field the refusal names)
    "data file name": (data_file, "snapshot.deltaManifestList[0].entries[0].fileName"),
    "extra file name": (extra_file, "snapshot.deltaManifestList[0].entries[0].extraFiles[1]"),
    "external path": (external_path, "snapshot.deltaManifestList[0].entries[0].externalPath"),
    "delta manifest name": (delta_manifest, "snapshot.deltaManifestList[0].fileName"),
    "base manifest name": (base_manifest, "snapshot.baseManifestList[1].fileName"),
    "delta manifest list name": (delta_list, "snapshot.deltaManifestList"),
    "changelog manifest list name": (changelog_list, "snapshot.changelogManifestList"),
    "index manifest name": (index_manifest, "snapshot.indexManifest"),
    "statistics file name": (statistics, "snapshot.statistics"),
    "index file name": (index_file, "snapshot.indexManifest.entries[0].fileName"),
    "index file external path": (index_external_path, "snapshot.indexManifest.entries[0].externalPath"),
    "deletion vector's data file": (
        deletion_vector_file,
        "snapshot.indexManifest.entries[0].deletionVectorsRanges[0].dataFileName",
    ),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_path_out_of_the_table_is_refused_and_changes_nothing(two: TwoTables, attack: str) -> None:
    make, field = ATTACKS[attack]
    # The file the attack aims at is b.t2's, and it is read.
    assert file_exists(two.victim_location)
    rows = two.b_rows()
    assert [r["id"] for r in rows] == [1, 2]
    body = make(two)
    before = tree_digest(two.warehouse)
    latest = two.a.latest_id()

    response = two.a.post(body)

    assert 400 <= response.status_code < 500, response.text
    message = response.json()["message"]
    assert message.startswith(field) or f"{field}:" in message, message
    if ".entries[" in field:  # the message says how entries are counted
        assert "the i-th manifest of that list and the j-th entry of that manifest" in message
    assert tree_digest(two.warehouse) == before
    assert two.a.latest_id() == latest
    assert all(path.startswith(f"{two.a.location}/dt=x/bucket-0/") for path in two.files_of_a())
    assert two.b_rows() == rows


def test_a_refused_path_is_in_the_access_log(two: TwoTables, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="coordinator.access"):
        response = two.a.post(data_file(two))
    assert 400 <= response.status_code < 500, response.text
    (line,) = [r for r in caplog.records if getattr(r, "audit", None) == "refuse-path"]
    assert (line.table, line.door, line.actor) == ("a.t1", "rest-commit", "hostile-writer")  # type: ignore[attr-defined]
    assert line.field == "snapshot.deltaManifestList[0].entries[0].fileName"  # type: ignore[attr-defined]
    # And a row of the audit log, naming the caller the door knows (no tokens here: the default admin).
    audit = two.http.get("/audit").json()["entries"]
    (row,) = [e for e in audit if e["action"] == "refuse-path"]
    assert (row["target"], row["details"]["door"]) == ("a.t1", "rest-commit")
    assert row["details"]["field"] == "snapshot.deltaManifestList[0].entries[0].fileName"


def _outsider_snapshots(two: TwoTables, *, deleted_again: bool) -> None:
    """Snapshots a writer outside the coordinator put on a.t1's storage (the doors refuse them now):
    2 adds b.t2's data file by a climbing name; with `deleted_again`, 3 deletes it again. A native
    commit then adopts them, and lands after them."""
    a = two.a
    hostile = data_file(two)["snapshot"]
    write_bytes(f"{a.location}/snapshot/snapshot-2", json.dumps(hostile).encode())
    if deleted_again:
        second = a.snapshot(2)
        (added,) = [e for m in a.metas(second.delta_manifest_list) for e in a.entries(m)]
        delete = a.manifest([dataclasses.replace(added, kind=FileKind.DELETE)], f"manifest-{uuid.uuid4()}-0")
        base = a.metas(second.base_manifest_list) + a.metas(second.delta_manifest_list)
        third = {
            **hostile,
            "id": 3,
            "uuid": str(uuid.uuid4()),
            "commitIdentifier": 3,
            "commitKind": "COMPACT",
            "baseManifestList": a.manifest_list(base, f"manifest-list-{uuid.uuid4()}-0"),
            "deltaManifestList": a.manifest_list([delete], f"manifest-list-{uuid.uuid4()}-1"),
        }
        write_bytes(f"{a.location}/snapshot/snapshot-3", json.dumps(third).encode())
    native = PaimonTable(two.http.get("/tables/a.t1").json())
    rows = [{"dt": "x", "id": 7}]
    message = native.append_message(rows)
    committed = two.http.post(
        "/tables/a.t1/commits", json={"commitUser": "native", "identifier": 1, "messages": [message]}
    )
    assert committed.status_code == 201, committed.text
    assert a.latest_id() == (4 if deleted_again else 3)


def _rollback(two: TwoTables) -> httpx.Response:
    """The probe's rollback: through the REST catalog, by a writer of a.t1."""
    _outsider_snapshots(two, deleted_again=False)
    return two.http.post(
        f"/v1/{CATALOG_NAME}/databases/a/tables/t1/rollback",
        json={"instant": {"type": "snapshot", "snapshotId": 1}},
        headers={**AUTH, "X-Coordinator-User": "ops-user"},
    )


def _expire(two: TwoTables) -> httpx.Response:
    """Expiring snapshot 3 deletes what it deleted: the file snapshot 2 named."""
    _outsider_snapshots(two, deleted_again=True)
    retain_one = {"set": {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}}
    assert two.http.patch("/tables/a.t1/options", json=retain_one).status_code == 200
    return two.http.post("/tables/a.t1/expire", headers={"X-Coordinator-User": "ops-user"})


def _delete_tag(two: TwoTables) -> httpx.Response:
    """A tag on snapshot 2 keeps its files past expiration; deleting it deletes them."""
    _outsider_snapshots(two, deleted_again=True)
    assert two.http.post("/tables/a.t1/tags", json={"name": "t", "snapshotId": 2}).status_code == 201
    retain_one = {"set": {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}}
    assert two.http.patch("/tables/a.t1/options", json=retain_one).status_code == 200
    expired = two.http.post("/tables/a.t1/expire")
    assert expired.status_code == 200, expired.text  # the tag keeps the file: nothing outside is deleted
    assert expired.json()["expiredSnapshots"] == 3
    return two.http.delete("/tables/a.t1/tags/t", headers={"X-Coordinator-User": "ops-user"})


MAINTENANCE: dict[str, tuple[Callable[[TwoTables], httpx.Response], str]] = {
    "rollback": (_rollback, "rollback"),
    "expire": (_expire, "expire"),
    "delete tag": (_delete_tag, "delete-tag"),
}


@pytest.mark.parametrize("action", list(MAINTENANCE))
def test_maintenance_never_deletes_outside_its_table(two: TwoTables, action: str) -> None:
    """Metadata naming b.t2's file, put on storage by an outside writer and adopted: the action that
    would delete it is refused whole (nothing deleted, the table as it was), and audited."""
    act, door = MAINTENANCE[action]
    b_rows = two.b_rows()
    b_before = tree_digest(two.b.location)

    response = act(two)

    assert 400 <= response.status_code < 500, response.text
    assert "b.db/t2" in response.json()["message"], response.text
    assert file_exists(two.victim_location)
    assert tree_digest(two.b.location) == b_before
    assert two.b_rows() == b_rows
    audit = two.http.get("/audit").json()["entries"]
    refused = [e for e in audit if e["action"] == "refuse-path"]
    assert [(e["target"], e["actor"], e["details"]["door"]) for e in refused] == [("a.t1", "ops-user", door)]


def test_a_refused_rollback_leaves_the_table_as_it_was(two: TwoTables) -> None:
    _outsider_snapshots(two, deleted_again=False)
    before = tree_digest(two.warehouse)
    rollback = two.http.post("/tables/a.t1/rollback", json={"snapshotId": 1})
    assert rollback.status_code == 422, rollback.text
    assert tree_digest(two.warehouse) == before
    assert two.a.latest_id() == 3
