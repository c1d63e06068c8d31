"""pypaimon 2.1.0 writes and commits through Paimon's REST protocol: a partitioned append table and a
primary-key table with buckets, three commits each, read back row for row; the native API's history
names those commits; snapshots by version and rollback through the same protocol."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pypaimon.api.rest_exception import NoSuchResourceException
from pypaimon.catalog.catalog_exception import TagAlreadyExistException, TagNotExistException
from pypaimon.table.instant import Instant

from tests.support.paimon_files import read_text
from tests.support.rest_writers import CATALOG_NAME, create_rest_table, read_rows, rest_catalog, write_rows
from tests.support.served import LiveServer

AUTH = {"Authorization": "Bearer any-token"}
ORDERS = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("v", pa.string()),
    ]
)
BATCHES = [
    [{"dt": "2024-01-01", "id": 1, "v": "a"}, {"dt": "2024-01-02", "id": 2, "v": "b"}],
    [{"dt": "2024-01-01", "id": 3, "v": "c"}, {"dt": "2024-01-01", "id": 1, "v": "a2"}],
    [{"dt": "2024-01-03", "id": 4, "v": "d"}, {"dt": "2024-01-02", "id": 2, "v": "b2"}],
]


def by_key(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in rows)


def rest_path(table: str) -> str:
    return f"/v1/{CATALOG_NAME}/databases/db/tables/{table}"


@pytest.mark.parametrize(
    ("name", "primary_keys", "options", "expected"),
    [
        ("events", [], {}, [r for batch in BATCHES for r in batch]),
        (
            "orders",
            ["dt", "id"],
            {"bucket": "2"},
            # Upserts by (dt, id): the later batch's row wins.
            [*BATCHES[1][:1], BATCHES[1][1], BATCHES[2][0], BATCHES[2][1]],
        ),
    ],
)
def test_three_commits_read_back_and_in_the_history(
    live_server: LiveServer,
    http: httpx.Client,
    name: str,
    primary_keys: list[str],
    options: dict[str, str],
    expected: list[dict[str, Any]],
) -> None:
    catalog = rest_catalog(live_server.url)
    table = create_rest_table(
        catalog, f"db.{name}", ORDERS, partition_keys=["dt"], primary_keys=primary_keys, options=options
    )
    for batch in BATCHES:
        write_rows(catalog.get_table(f"db.{name}"), pa.Table.from_pylist(batch, schema=ORDERS))

    assert by_key(read_rows(table)) == by_key(expected)
    assert by_key(read_rows(rest_catalog(live_server.url).get_table(f"db.{name}"))) == by_key(expected)

    native = http.get(f"/tables/db.{name}").json()
    assert native["latestSnapshotId"] == 3
    history = http.get(f"/tables/db.{name}/commits").json()["commits"]
    committed = sorted((c for c in history if c["outcome"] == "committed"), key=lambda c: c["id"])
    assert [c["snapshots"] for c in committed] == [[{"id": i, "commitKind": "APPEND"}] for i in (1, 2, 3)]
    for snapshot_id, record in enumerate(committed, start=1):
        on_storage = _snapshot_file(native["location"], snapshot_id)
        assert (record["commitUser"], record["identifier"]) == (
            on_storage["commitUser"],
            on_storage["commitIdentifier"],
        )
    # pypaimon's batch commits: a fresh commitUser per write builder, Long.MAX as the identifier.
    assert len({c["commitUser"] for c in committed}) == 3
    assert {c["identifier"] for c in committed} == {2**63 - 1}

    # What the dashboard shows: the recent commits of all tables, and the table's counters.
    recent = http.get("/commits", params={"table": f"db.{name}"}).json()["recent"]
    assert {(c["commitUser"], c["identifier"]) for c in recent if c["outcome"] == "committed"} == {
        (c["commitUser"], c["identifier"]) for c in committed
    }
    overview = http.get("/ops/overview", params={"database": "db"}).json()
    counters = next(t for t in overview["tables"] if t["tableId"] == f"db.{name}")
    assert (counters["latestSnapshotId"], counters["committed"]) == (3, 3)

    head = http.get(f"{rest_path(name)}/snapshot", headers=AUTH).json()["snapshot"]
    assert head["snapshot"] == _snapshot_file(native["location"], 3)
    assert head["recordCount"] == native["totalRecordCount"]
    assert head["fileCount"] == native["fileCount"] > 0
    assert head["fileSizeInBytes"] == native["fileBytes"] > 0
    assert head["lastFileCreationTime"] == head["snapshot"]["timeMillis"]


def test_snapshots_by_version_and_rollback(live_server: LiveServer, http: httpx.Client) -> None:
    catalog = rest_catalog(live_server.url)
    create_rest_table(catalog, "db.events", ORDERS, partition_keys=["dt"])
    for batch in BATCHES:
        write_rows(catalog.get_table("db.events"), pa.Table.from_pylist(batch, schema=ORDERS))
    location = http.get("/tables/db.events").json()["location"]

    def version(v: str) -> httpx.Response:
        return http.get(f"{rest_path('events')}/snapshots/{v}", headers=AUTH)

    assert version("EARLIEST").json()["snapshot"] == _snapshot_file(location, 1)
    assert version("LATEST").json()["snapshot"] == _snapshot_file(location, 3)
    assert version("2").json()["snapshot"] == _snapshot_file(location, 2)
    missing = version("9")
    assert (missing.status_code, missing.json()["resourceType"]) == (404, "SNAPSHOT")
    listed = http.get(f"{rest_path('events')}/snapshots", params={"maxResults": 2}, headers=AUTH).json()
    assert [s["id"] for s in listed["snapshots"]] == [3, 2]
    rest = http.get(
        f"{rest_path('events')}/snapshots", params={"pageToken": listed["nextPageToken"]}, headers=AUTH
    ).json()
    assert ([s["id"] for s in rest["snapshots"]], rest["nextPageToken"]) == ([1], None)

    # From a snapshot that is not the latest: refused, nothing moves.
    moved = http.post(
        f"{rest_path('events')}/rollback",
        json={"instant": {"type": "snapshot", "snapshotId": 1}, "fromSnapshot": 2},
        headers=AUTH,
    )
    assert moved.status_code == 409, moved.text
    assert http.get("/tables/db.events").json()["latestSnapshotId"] == 3

    catalog.rollback_to("db.events", Instant.snapshot(2), from_snapshot=3)
    assert by_key(read_rows(catalog.get_table("db.events"))) == by_key(BATCHES[0] + BATCHES[1])
    history = http.get("/tables/db.events/commits").json()["commits"]
    assert history[0]["action"] == "rollback"
    assert history[0]["details"]["to"] == {"snapshotId": 2}

    with pytest.raises(NoSuchResourceException):
        catalog.rest_api.rollback_to(_identifier("db.events"), Instant.snapshot(7), None)
    # pypaimon writes on after the rollback: the next snapshot is 3 again.
    write_rows(catalog.get_table("db.events"), pa.Table.from_pylist(BATCHES[2], schema=ORDERS))
    assert http.get("/tables/db.events").json()["latestSnapshotId"] == 3
    assert len(read_rows(catalog.get_table("db.events"))) == 6


def _identifier(name: str) -> Any:
    from pypaimon.common.identifier import Identifier

    return Identifier.from_string(name)


def _snapshot_file(location: str, snapshot_id: int) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(read_text(f"{location}/snapshot/snapshot-{snapshot_id}"))
    return document


def test_tags_through_the_catalog(live_server: LiveServer, http: httpx.Client) -> None:
    """pypaimon's catalog tag calls reach the native tag use cases: tag files, history rows, rollback."""
    catalog = rest_catalog(live_server.url)
    create_rest_table(catalog, "db.events", ORDERS, partition_keys=["dt"])
    for batch in BATCHES[:2]:
        write_rows(catalog.get_table("db.events"), pa.Table.from_pylist(batch, schema=ORDERS))
    location = http.get("/tables/db.events").json()["location"]

    catalog.create_tag("db.events", "first", snapshot_id=1)
    catalog.create_tag("db.events", "latest")
    with pytest.raises(TagAlreadyExistException):
        catalog.create_tag("db.events", "first")
    catalog.create_tag("db.events", "first", ignore_if_exists=True)
    assert catalog.list_tags_paged("db.events").elements == ["first", "latest"]
    page = catalog.list_tags_paged("db.events", max_results=1)
    assert (page.elements, page.next_page_token) == (["first"], "first")
    assert catalog.list_tags_paged("db.events", page_token="first").elements == ["latest"]
    assert catalog.list_tags_paged("db.events", tag_name_prefix="la").elements == ["latest"]

    tagged = http.get(f"{rest_path('events')}/tags/first", headers=AUTH).json()
    assert tagged["tagName"] == "first"
    assert tagged["snapshot"]["id"] == 1
    assert tagged["snapshot"] == json.loads(read_text(f"{location}/tag/tag-first"))
    assert catalog.get_tag("db.events", "latest").snapshot.id == 2
    with pytest.raises(TagNotExistException):
        catalog.get_tag("db.events", "nope")
    assert http.get(f"{rest_path('events')}/snapshots/first", headers=AUTH).json()["snapshot"]["id"] == 1

    catalog.rollback_to("db.events", Instant.tag("first"))
    assert by_key(read_rows(catalog.get_table("db.events"))) == by_key(BATCHES[0])
    # The tag newer than the target went with the rollback, as the native rollback does.
    assert catalog.list_tags_paged("db.events").elements == ["first"]
    catalog.delete_tag("db.events", "first")
    with pytest.raises(TagNotExistException):
        catalog.delete_tag("db.events", "first")
    actions = [c["action"] for c in http.get("/tables/db.events/commits").json()["commits"]]
    assert actions[:4] == ["delete-tag", "rollback", "create-tag", "create-tag"]
