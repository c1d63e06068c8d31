"""The streamed scan plan (GET /tables/{id}/files): the same files as the old in-memory merge, every live
file exactly once, manifests pruned by partition statistics, clear 4xx for bad parameters, and a stream
that cannot be mistaken for the whole plan when it breaks off."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from bench.metadata_table import write_metadata_table
from coordinator.services import Services
from coordinator.storage.fileio import LocalFileIO
from coordinator.usecases.reads import Reads
from coordinator.usecases.scan_plan import live_file_model
from coordinator_client import AsyncCoordinatorClient, BadRequest, CoordinatorClient, NotFound, ServerError
from paimon_format.binary_row import decode_row, encode_row
from paimon_format.manifest import ManifestFileMeta, decode_manifest, decode_manifest_list
from paimon_format.snapshot import Snapshot
from paimon_format.types import parse_type
from tests.support.commits import commit
from tests.support.paimon_files import PaimonTable, create_table, deletion_of
from tests.support.served import LiveServer

JSON_LINES = {"Accept": "application/x-ndjson"}
MERGING = {
    "manifest.merge-min-count": "2",
    "manifest.target-file-size": "1 kb",
    "manifest.full-compaction-threshold-size": "2 kb",
}
"""Thresholds a handful of commits crosses: base manifests merged, ADD/DELETE pairs cancelled."""


def build_history(api: TestClient, name: str, options: dict[str, str]) -> PaimonTable:
    """Appends to partitions a, b and c, a compaction of a, an overwrite of b, then more appends."""
    fields = {"dt": "STRING", "id": "BIGINT", "v": "STRING"}
    table = create_table(
        api,
        "db",
        name,
        fields,
        partitionKeys=["dt"],
        primaryKeys=["dt", "id"],
        options={"bucket": "1", **options},
    )
    sequence = 0
    live: dict[str, list[dict[str, Any]]] = {"a": [], "b": [], "c": []}
    rows_of: dict[str, list[dict[str, Any]]] = {"a": [], "b": [], "c": []}

    def append(dt: str, first_id: int) -> None:
        nonlocal sequence
        rows = [{"dt": dt, "id": first_id + j, "v": "x"} for j in range(3)]
        f = table.pk_file(rows, first_sequence=sequence)
        sequence += 3
        commit(api, table, [table.message(rows[0], newFiles=[f])])
        live[dt].append(f)
        rows_of[dt].extend(rows)

    for i in range(9):
        append("abc"[i % 3], i * 10)
    merged = table.pk_file(rows_of["a"], first_sequence=sequence, level=5)
    sequence += len(rows_of["a"])
    before = [deletion_of(f) for f in live["a"]]
    commit(api, table, [table.message(rows_of["a"][0], compactBefore=before, compactAfter=[merged])])
    replacement = table.pk_file([{"dt": "b", "id": 1000, "v": "y"}], first_sequence=sequence)
    sequence += 1
    overwrite = {"mode": "static", "partition": {"dt": "b"}}
    commit(api, table, [table.message({"dt": "b", "id": 1000}, newFiles=[replacement])], overwrite=overwrite)
    for i in range(4):
        append("ac"[i % 2], 100 + i * 10)
    return table


def document(api: TestClient, table_id: str, **params: Any) -> dict[str, Any]:
    response = api.get(f"/tables/{table_id}/files", params=_query(params))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    return body


def json_lines(api: TestClient, table_id: str, **params: Any) -> tuple[int | None, list[dict[str, Any]]]:
    response = api.get(f"/tables/{table_id}/files", params=_query(params), headers=JSON_LINES)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/x-ndjson"
    header, *files, end = [json.loads(line) for line in response.text.splitlines()]
    assert end == {"fileCount": len(files)}
    return header["snapshotId"], files


def _query(params: dict[str, Any]) -> dict[str, Any]:
    return {k: json.dumps(v) if k == "partition" else v for k, v in params.items()}


def old_listing(services: Services, table_id: str, snapshot_id: int) -> list[dict[str, Any]]:
    """What GET /files answered before it streamed: every manifest read, merged in memory."""
    table = services.tables.get(table_id)
    _, entries = services.reads.live_entries(table_id, snapshot_id)
    return [live_file_model(table, e).model_dump(mode="json", by_alias=True) for e in entries]


def by_path(files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    paths = Counter(f["path"] for f in files)
    assert max(paths.values(), default=1) == 1, "a file listed twice"
    return sorted(files, key=lambda f: str(f["path"]))


@pytest.mark.parametrize("options", [{}, MERGING], ids=["unmerged", "merged"])
def test_the_stream_lists_what_the_in_memory_merge_listed_at_every_snapshot(
    api: TestClient, options: dict[str, str]
) -> None:
    table = build_history(api, "history", options)
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    latest = services.tables.latest_snapshot_id(table.id)
    assert latest == 15
    for snapshot_id in range(1, latest + 1):
        expected = by_path(old_listing(services, table.id, snapshot_id))
        answer = document(api, table.id, snapshot=snapshot_id)
        assert answer["snapshotId"] == snapshot_id
        assert by_path(answer["files"]) == expected
        pinned, streamed = json_lines(api, table.id, snapshot=snapshot_id)
        assert pinned == snapshot_id
        assert by_path(streamed) == expected
        for dt in ("a", "b", "c", "zz"):
            only = [f for f in expected if f["partition"] == {"dt": dt}]
            assert (
                by_path(document(api, table.id, snapshot=snapshot_id, partition={"dt": dt})["files"]) == only
            )
            assert by_path(json_lines(api, table.id, snapshot=snapshot_id, partition={"dt": dt})[1]) == only
    latest_files = document(api, table.id)["files"]
    # the compaction replaced a's four files by one, the overwrite b's three by one
    assert Counter(f["partition"]["dt"] for f in latest_files) == {"a": 3, "b": 1, "c": 5}


@pytest.mark.parametrize("options", [{}, MERGING], ids=["unmerged", "merged"])
def test_a_snapshots_delta_is_the_files_it_adds(api: TestClient, options: dict[str, str]) -> None:
    """scope=delta: what a streaming reader takes of each snapshot. In this history no snapshot deletes a
    file it adds, so its delta is exactly the files live at it and not at the one before; compaction and
    overwrite add their one new file, merged manifests (in the base list) add nothing."""
    table = build_history(api, "delta", options)
    before: dict[str, dict[str, Any]] = {}
    for snapshot_id in range(1, 16):
        live = {f["path"]: f for f in document(api, table.id, snapshot=snapshot_id)["files"]}
        added = by_path([f for path, f in live.items() if path not in before])
        assert len(added) == 1  # one file per commit of build_history
        answer = document(api, table.id, snapshot=snapshot_id, scope="delta")
        assert answer["snapshotId"] == snapshot_id
        assert by_path(answer["files"]) == added
        assert json_lines(api, table.id, snapshot=snapshot_id, scope="delta") == (snapshot_id, added)
        for dt in ("a", "b", "zz"):
            only = [f for f in added if f["partition"] == {"dt": dt}]
            assert (
                json_lines(api, table.id, snapshot=snapshot_id, scope="delta", partition={"dt": dt})[1]
                == only
            )
        before = live


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_both_clients_list_a_snapshots_added_files(live_server: LiveServer, anyio_backend: str) -> None:
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        table = create_table(http, "db", "t", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"])
        first = table.append_file([{"dt": "a", "id": 1}])
        commit(http, table, [table.message({"dt": "a"}, newFiles=[first])])
        second = table.append_file([{"dt": "b", "id": 2}])
        commit(http, table, [table.message({"dt": "b"}, newFiles=[second])])
    with CoordinatorClient(live_server.url, timeout=60) as client:
        with client.scan_plan(table.id, 2, scope="delta") as plan:
            assert plan.snapshot_id == 2
            assert [f.partition for f in plan] == [{"dt": "b"}]
        assert [f.partition for f in client.live_files(table.id, 1, scope="delta").files] == [{"dt": "a"}]
        assert len(client.live_files(table.id, 2).files) == 2  # the default scope is unchanged
        assert client.live_files(table.id, 2, {"dt": "a"}, scope="delta").files == []
        with pytest.raises(BadRequest) as refused:
            client.live_files(table.id, scope="delta")
        assert refused.value.field == "snapshot"
        with pytest.raises(NotFound):
            client.live_files(table.id, 3, scope="delta")
    async with AsyncCoordinatorClient(live_server.url, timeout=60) as aclient:
        async with await aclient.scan_plan(table.id, 2, scope="delta") as aplan:
            assert [f.partition async for f in aplan] == [{"dt": "b"}]
        added = await aclient.live_files(table.id, 1, scope="delta")
        assert (added.snapshot_id, [f.partition for f in added.files]) == (1, [{"dt": "a"}])


class CountingFileIO(LocalFileIO):
    """Local disk that records every path it reads."""

    def __init__(self) -> None:
        self.reads: list[str] = []

    def read(self, path: str) -> bytes:
        self.reads.append(path)
        return super().read(path)


def _manifests(table: PaimonTable, snapshot_id: int) -> list[ManifestFileMeta]:
    snapshot = Snapshot.from_json((table.snapshot_dir / f"snapshot-{snapshot_id}").read_text())
    return [
        meta
        for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list)
        for meta in decode_manifest_list((table.manifest_dir / name).read_bytes())
    ]


@pytest.mark.parametrize("options", [{}, MERGING], ids=["unmerged", "merged"])
def test_a_partition_is_planned_from_the_manifests_whose_stats_may_hold_it(
    api: TestClient, options: dict[str, str]
) -> None:
    table = build_history(api, "pruned", options)
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    latest = services.tables.latest_snapshot_id(table.id)
    metas = _manifests(table, latest)
    string = [parse_type("STRING")]
    for dt in ("a", "b", "c"):
        fileio = CountingFileIO()
        reads = Reads(services.engine, fileio, services.tables, services.holds.ends)
        plan = reads.files(table.id, None, json.dumps({"dt": dt}))
        files = [f.model_dump(mode="json", by_alias=True) for f in plan.files()]
        assert by_path(files) == by_path(
            [f for f in old_listing(services, table.id, latest) if f["partition"]["dt"] == dt]
        )
        read = {Path(p).name for p in fileio.reads if "/manifest/manifest-" in p and "manifest-list" not in p}
        for meta in metas:
            entries = decode_manifest((table.manifest_dir / meta.file_name).read_bytes())
            low, high = (
                decode_row(meta.partition_stats.min_values, string)[0],
                decode_row(meta.partition_stats.max_values, string)[0],
            )
            if any(e.partition == table_partition(dt) for e in entries):
                assert meta.file_name in read  # a manifest holding the partition is read
            if not (str(low) <= dt <= str(high)):
                assert meta.file_name not in read  # one whose stats exclude it never is
        if not options:  # one partition per manifest: the others are all skipped
            holding = {
                m.file_name
                for m in metas
                if any(
                    e.partition == table_partition(dt)
                    for e in decode_manifest((table.manifest_dir / m.file_name).read_bytes())
                )
            }
            assert read == holding
            assert len(read) < len(metas)


def table_partition(dt: str) -> bytes:
    return encode_row([dt], [parse_type("STRING")])


@pytest.mark.parametrize(
    ("params", "status", "field"),
    [
        ({"snapshot": "0"}, 422, "snapshot"),
        ({"snapshot": "x"}, 422, "snapshot"),
        ({"snapshot": "99"}, 404, None),
        ({"partition": "not json"}, 422, "partition"),
        ({"partition": '["a"]'}, 422, "partition"),
        ({"partition": '{"region": "x"}'}, 422, "partition"),
        ({"partition": '{"dt": 5}'}, 422, "partition"),
        ({"scope": "changes"}, 422, "scope"),
        ({"scope": "delta"}, 422, "snapshot"),
        ({"scope": "delta", "snapshot": "99"}, 404, None),
    ],
)
def test_bad_parameters_are_refused_before_the_stream_begins(
    api: TestClient, params: dict[str, str], status: int, field: str | None
) -> None:
    table = create_table(api, "db", "bad", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"])
    commit(api, table, [table.message({"dt": "a"}, newFiles=[table.append_file([{"dt": "a", "id": 1}])])])
    for headers in ({}, JSON_LINES):
        response = api.get(f"/tables/{table.id}/files", params=params, headers=headers)
        assert response.status_code == status, response.text
        assert response.headers["content-type"] == "application/json"
        assert response.json().get("field") == field
    assert api.get("/tables/db.nope/files").json()["code"] == "TABLE_NOT_FOUND"


def test_a_table_without_snapshots_has_an_empty_plan(api: TestClient) -> None:
    table = create_table(api, "db", "empty", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"])
    assert document(api, table.id) == {"snapshotId": None, "files": []}
    assert json_lines(api, table.id, partition={"dt": "a"}) == (None, [])


@pytest.fixture
def big(live_server: LiveServer, warehouse: Path) -> tuple[str, int]:
    """A metadata-only table of 30,000 files (200 deleted again) in 60 partitions, registered by location."""
    written = write_metadata_table(
        warehouse / "big.db" / "t", files=30_000, partitions=60, per_manifest=2_000, deleted=200
    )
    body = {"database": "big", "name": "t", "location": str(written.location)}
    assert httpx.post(f"{live_server.url}/tables", json=body, timeout=60).status_code == 201
    return "big.t", written.files


def test_a_large_plan_streams_every_file_once_over_http(
    live_server: LiveServer, big: tuple[str, int]
) -> None:
    table_id, count = big
    services = live_server.services
    with CoordinatorClient(live_server.url, timeout=120) as client:
        with client.scan_plan(table_id) as plan:
            assert plan.snapshot_id == 1
            paths = [f.path for f in plan]
        assert len(paths) == len(set(paths)) == count
        assert sorted(paths) == sorted(f["path"] for f in old_listing(services, table_id, 1))
        one = client.live_files(table_id, partition={"dt": "p0007"})
        assert {f.partition["dt"] for f in one.files} == {"p0007"}
        assert len(one.files) == sum(1 for p in paths if "/dt=p0007/" in p) > 0
    document = httpx.get(f"{live_server.url}/tables/{table_id}/files", timeout=120).json()
    assert sorted(f["path"] for f in document["files"]) == sorted(paths)


def test_a_plan_that_breaks_off_is_never_taken_for_the_whole(
    live_server: LiveServer, big: tuple[str, int], warehouse: Path
) -> None:
    """Manifests of other partitions made unreadable: a one-partition plan never reads them, and a full
    plan fails visibly: the JSON lines end with the error, the JSON document is cut off."""
    table_id, _ = big
    location = warehouse / "big.db" / "t"
    metas = decode_manifest_list((location / "manifest" / "manifest-list-scan-0").read_bytes())
    string = [parse_type("STRING")]
    spared = 0
    for meta in metas:
        low = decode_row(meta.partition_stats.min_values, string)[0]
        high = decode_row(meta.partition_stats.max_values, string)[0]
        if str(low) <= "p0007" <= str(high):
            spared += 1
        else:
            (location / "manifest" / meta.file_name).write_bytes(b"not a manifest")
    assert 0 < spared < len(metas) - 1
    with CoordinatorClient(live_server.url, timeout=120) as client:
        one = client.live_files(table_id, partition={"dt": "p0007"})
        assert one.files
        assert {f.partition["dt"] for f in one.files} == {"p0007"}
        with pytest.raises(ServerError, match="corrupt manifest"), client.scan_plan(table_id) as plan:
            for _ in plan:
                pass
    with pytest.raises((httpx.RemoteProtocolError, json.JSONDecodeError)):
        httpx.get(f"{live_server.url}/tables/{table_id}/files", timeout=120).json()
