"""How the coordinator decides snapshots that pypaimon commits through Paimon's REST protocol, beside
native commits to the same table: compare-and-set on the base, rebasing clients, resends, conflicts
with native compactions, and manifests kept bounded.

The writer is unmodified pypaimon 2.1.0 with `metastore=rest` against a real uvicorn server; native
commits go through the same server's use cases (a commit held at its commit point, to order a race).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pyarrow as pa
import pytest

from coordinator.commit.commit_point import commit_each
from coordinator.commit.snapshot_acceptance import MANIFEST_MERGE_USER, REBASE_APPENDS
from coordinator_client.models import CommitRequest
from paimon_format.manifest import (
    FileKind,
    SimpleStats,
    decode_manifest,
    decode_manifest_list,
    encode_manifest,
    encode_manifest_list,
)
from paimon_format.manifest_meta import manifest_file_meta
from paimon_format.manifest_model import EMPTY_ROW
from paimon_format.snapshot import CommitKind, Snapshot
from tests.support.commits import append_commit, history
from tests.support.paimon_files import PaimonTable, deletion_of, read_bytes, read_text, write_bytes
from tests.support.pause import PausedCall
from tests.support.rest_writers import (
    CATALOG_NAME,
    create_rest_table,
    prepare,
    read_rows,
    rest_catalog,
    write_rows,
)
from tests.support.served import LiveServer

EVENTS = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])


def events(ids: range) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "v": f"r{i}"} for i in ids], schema=EVENTS)


def native_table(http: httpx.Client, table_id: str) -> PaimonTable:
    response = http.get(f"/tables/{table_id}")
    assert response.status_code == 200, response.text
    return PaimonTable(response.json())


def native_append(table: PaimonTable, ids: range, identifier: int = 1) -> CommitRequest:
    rows = [{"id": i, "v": f"r{i}"} for i in ids]
    return CommitRequest.model_validate(append_commit(table, rows, user="native-job", identifier=identifier))


def snapshot_on_storage(table: PaimonTable, snapshot_id: int) -> Snapshot:
    return Snapshot.from_json(read_text(f"{table.location}/snapshot/snapshot-{snapshot_id}"))


def latest_id(http: httpx.Client, table_id: str) -> int:
    latest: int = http.get(f"/tables/{table_id}").json()["latestSnapshotId"]
    return latest


@pytest.mark.parametrize(
    ("rebase_appends", "overwrite", "outcomes", "rows"),
    [
        # The protocol: the client is told, rebases on the native snapshot and lands on top of it.
        (False, False, ["rejected", "committed"], [0, 1, 2, 3, 4, 10, 11]),
        # The table asks the coordinator to rebase appends: it does, and the client hears true at once.
        (True, False, ["committed"], [0, 1, 2, 3, 4, 10, 11]),
        # An overwrite is never rebased by the coordinator: what it replaces depends on the new head.
        (True, True, ["rejected", "committed"], [3, 4]),
    ],
    ids=["told", "rebased-by-the-coordinator", "overwrite-told"],
)
def test_a_rest_commit_whose_base_moved(
    live_server: LiveServer, rebase_appends: bool, overwrite: bool, outcomes: list[str], rows: list[int]
) -> None:
    """A native commit lands between pypaimon's `GET snapshot` and its `POST commit`."""
    catalog = rest_catalog(live_server.url)
    options = {REBASE_APPENDS: "true"} if rebase_appends else {}
    table = create_rest_table(catalog, "db.events", EVENTS, options=options)
    write_rows(table, events(range(3)))
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        native = native_table(http, "db.events")
        committer = live_server.services.committer
        held = PausedCall(
            lambda: committer.commit("db.events", native_append(native, range(10, 12))), at=commit_each
        ).start()
        rest_commit, messages = prepare(table, events(range(3, 5)), overwrite=overwrite)
        with ThreadPoolExecutor(1) as pool:
            rest = pool.submit(rest_commit.commit, messages)
            queues = live_server.services.queues
            while queues.depth("db.events") == 0:  # pypaimon read snapshot 1 and now waits
                assert not rest.done(), rest.exception()
            assert [s.id for s in held.resume().snapshots] == [2]
            rest.result(timeout=60)

        third = snapshot_on_storage(native, 3)
        attempts = [
            c for c in history(http, "db.events", oldest_first=True) if c["commitUser"] == third.commit_user
        ]
        assert [c["outcome"] for c in attempts] == outcomes
        if len(attempts) == 2:
            assert attempts[0]["conflict"]["type"] == "BASE_SNAPSHOT_MOVED"
        kind = "OVERWRITE" if overwrite else "APPEND"
        assert attempts[-1]["snapshots"] == [{"id": 3, "commitKind": kind}]
        assert snapshot_on_storage(native, 2).commit_user == "native-job"
        assert third.uuid is not None
        assert third.total_record_count == len(rows)
        assert latest_id(http, "db.events") == 3
    ids = [r["id"] for r in read_rows(catalog.get_table("db.events"))]
    assert sorted(ids) == rows


def test_rest_and_native_commits_interleave_in_order(live_server: LiveServer) -> None:
    catalog = rest_catalog(live_server.url)
    table = create_rest_table(catalog, "db.mixed", EVENTS)
    committer = live_server.services.committer
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        native = native_table(http, "db.mixed")
        for round_ in range(3):
            write_rows(catalog.get_table("db.mixed"), events(range(round_ * 10, round_ * 10 + 2)))
            committer.commit(
                "db.mixed", native_append(native, range(round_ * 10 + 5, round_ * 10 + 6), round_)
            )
        kinds = [snapshot_on_storage(native, i).commit_user == "native-job" for i in range(1, 7)]
        assert kinds == [False, True] * 3
        assert latest_id(http, "db.mixed") == 6
    assert len(read_rows(table)) == 3 * 3


def test_the_same_snapshot_posted_twice_makes_one_snapshot(live_server: LiveServer) -> None:
    """A transport resend (Java resends a POST on 503) and a client that missed its own commit both
    find it published: `success: true`, no second snapshot."""
    catalog = rest_catalog(live_server.url)
    table = create_rest_table(catalog, "db.resent", EVENTS)
    write_rows(table, events(range(2)))
    write_rows(table, events(range(2, 4)))
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        native = native_table(http, "db.resent")
        first, second = snapshot_on_storage(native, 1), snapshot_on_storage(native, 2)
        body = {
            "tableId": http.get("/tables/db.resent").json()["uuid"],
            "baseSnapshotUuid": first.uuid,
            "snapshot": json.loads(second.to_json()),
            "statistics": [],
        }
        path = f"/v1/{CATALOG_NAME}/databases/db/tables/resent/commit"
        resent = http.post(path, json=body, headers={"Authorization": "Bearer t"})
        assert resent.status_code == 200, resent.text
        assert resent.json() == {"success": True}
        # The same commit (user, identifier, kind) built again with a fresh uuid: Paimon's own match.
        body["snapshot"] = {**body["snapshot"], "uuid": str(uuid.uuid4())}
        again = http.post(path, json=body, headers={"Authorization": "Bearer t"})
        assert again.json() == {"success": True}
        assert latest_id(http, "db.resent") == 2
        committed = [
            c for c in history(http, "db.resent", oldest_first=True) if c["commitUser"] == second.commit_user
        ]
        assert [c["outcome"] for c in committed] == ["committed"]
    assert len(read_rows(table)) == 4


KEYED = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def keyed(ids: range, value: str) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "v": value} for i in ids], schema=KEYED)


def _compaction_of_the_live_file(http: httpx.Client, native: PaimonTable) -> CommitRequest:
    """A native compaction of the bucket's one level-0 file into a level-5 file of the same rows."""
    files = http.get(f"/tables/{native.id}/files").json()["files"]
    assert len(files) == 1
    live = files[0]
    rows = [{"id": i, "v": "old"} for i in range(live["minKey"][0], live["maxKey"][0] + 1)]
    after = native.pk_file(rows, first_sequence=live["minSequenceNumber"], level=5)
    return CommitRequest.model_validate(
        {
            "commitUser": "compactor",
            "identifier": 1,
            "messages": [native.message(rows[0], compactBefore=[deletion_of(live)], compactAfter=[after])],
        }
    )


def test_a_native_compaction_that_loses_to_a_rest_overwrite_is_told(live_server: LiveServer) -> None:
    catalog = rest_catalog(live_server.url)
    table = create_rest_table(catalog, "db.keyed", KEYED, primary_keys=["id"], options={"bucket": "1"})
    write_rows(table, keyed(range(10), "old"))
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        native = native_table(http, "db.keyed")
        compaction = _compaction_of_the_live_file(http, native)
        compacted = compaction.messages[0].compact_before[0].file_name
        write_rows(catalog.get_table("db.keyed"), keyed(range(5), "new"), overwrite=True)
        response = http.post(
            "/tables/db.keyed/commits", json=compaction.model_dump(mode="json", by_alias=True)
        )
        assert response.status_code == 409, response.text
        conflict = response.json()["conflict"]
        assert conflict["type"] == "DELETED_FILE_MISSING"
        assert conflict["files"] == [compacted]
        assert conflict["winningSnapshot"]["id"] == 2
        assert conflict["winningSnapshot"]["commitKind"] == "OVERWRITE"
        assert latest_id(http, "db.keyed") == 2
    assert read_rows(catalog.get_table("db.keyed")) == [{"id": i, "v": "new"} for i in range(5)]


def test_a_rest_overwrite_prepared_before_a_native_compaction_lands_after_it(
    live_server: LiveServer,
) -> None:
    catalog = rest_catalog(live_server.url)
    table = create_rest_table(catalog, "db.keyed", KEYED, primary_keys=["id"], options={"bucket": "1"})
    write_rows(table, keyed(range(10), "old"))
    overwrite, messages = prepare(catalog.get_table("db.keyed"), keyed(range(5), "new"), overwrite=True)
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        native = native_table(http, "db.keyed")
        compaction = _compaction_of_the_live_file(http, native)
        response = http.post(
            "/tables/db.keyed/commits", json=compaction.model_dump(mode="json", by_alias=True)
        )
        assert response.status_code == 201, response.text
        overwrite.commit(messages)  # planned again on the compacted snapshot: it deletes that file
        assert latest_id(http, "db.keyed") == 3
        assert snapshot_on_storage(native, 3).commit_kind.value == "OVERWRITE"
    assert read_rows(catalog.get_table("db.keyed")) == [{"id": i, "v": "new"} for i in range(5)]


def test_manifests_of_rest_writers_stay_bounded(live_server: LiveServer) -> None:
    """pypaimon lists every manifest of its base again, one more per commit; the coordinator merges
    them with a snapshot of its own when Paimon's thresholds say so."""
    catalog = rest_catalog(live_server.url)
    table = create_rest_table(catalog, "db.bounded", EVENTS)
    commits = 40
    for i in range(commits):
        write_rows(catalog.get_table("db.bounded"), events(range(i, i + 1)))
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        native = native_table(http, "db.bounded")
        latest = latest_id(http, "db.bounded")
        snapshots = [snapshot_on_storage(native, i) for i in range(1, latest + 1)]
        merges = [s for s in snapshots if s.commit_user == MANIFEST_MERGE_USER]
        assert merges, "no manifest merge after 40 one-file commits"
        assert all(s.delta_record_count == 0 and s.commit_kind.value == "APPEND" for s in merges)
        assert latest == commits + len(merges)
        head = snapshots[-1]
        manifests = [
            m
            for name in (head.base_manifest_list, head.delta_manifest_list)
            for m in decode_manifest_list(read_bytes(f"{native.location}/manifest/{name}"))
        ]
        assert len(manifests) < 30, f"{len(manifests)} manifests after {commits} commits"
    assert sorted(r["id"] for r in read_rows(table)) == list(range(commits))


def test_the_compaction_of_a_commit_sent_as_its_own_snapshot_joins_its_history_row(
    live_server: LiveServer,
) -> None:
    """Java's engines send a commit's APPEND and its COMPACT as two snapshots of one (commitUser,
    identifier). The COMPACT is not a resend of the APPEND: it is decided, and both snapshots are one
    history row; the COMPACT sent again is a resend."""
    catalog = rest_catalog(live_server.url)
    table = create_rest_table(catalog, "db.java", EVENTS)
    write_rows(table, events(range(4)))
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        native = native_table(http, "db.java")
        first = snapshot_on_storage(native, 1)
        manifests = f"{native.location}/manifest"
        live = [
            e
            for m in decode_manifest_list(read_bytes(f"{manifests}/{first.delta_manifest_list}"))
            for e in decode_manifest(read_bytes(f"{manifests}/{m.file_name}"))
        ]
        assert len(live) == 1
        # The compaction rewrites the one file under a new name (what a compaction of an append table
        # writes), as the client would: data file, delta manifest, both manifest lists.
        old = live[0]
        bucket_dir = f"{native.location}/bucket-0"
        new_name = f"data-{uuid.uuid4()}-0.parquet"
        write_bytes(f"{bucket_dir}/{new_name}", read_bytes(f"{bucket_dir}/{old.file.file_name}"))
        delta = [
            dataclasses.replace(old, kind=FileKind.DELETE),
            dataclasses.replace(old, file=dataclasses.replace(old.file, file_name=new_name, file_source=1)),
        ]
        manifest = encode_manifest(delta)
        write_bytes(f"{manifests}/manifest-java-0", manifest)
        meta = manifest_file_meta(
            "manifest-java-0", len(manifest), delta, 0, SimpleStats(EMPTY_ROW, EMPTY_ROW, ())
        )
        base = decode_manifest_list(read_bytes(f"{manifests}/{first.base_manifest_list}"))
        base += decode_manifest_list(read_bytes(f"{manifests}/{first.delta_manifest_list}"))
        write_bytes(f"{manifests}/manifest-list-java-0", encode_manifest_list(base))
        write_bytes(f"{manifests}/manifest-list-java-1", encode_manifest_list([meta]))
        compact = dataclasses.replace(
            first,
            id=2,
            uuid=str(uuid.uuid4()),
            base_manifest_list="manifest-list-java-0",
            base_manifest_list_size=None,
            delta_manifest_list="manifest-list-java-1",
            delta_manifest_list_size=None,
            delta_record_count=0,
            commit_kind=CommitKind.COMPACT,
        )
        body = {
            "tableId": http.get("/tables/db.java").json()["uuid"],
            "baseSnapshotUuid": first.uuid,
            "snapshot": json.loads(compact.to_json()),
            "statistics": [],
        }
        path = f"/v1/{CATALOG_NAME}/databases/db/tables/java/commit"
        for _ in range(2):  # the second time, a resend
            answer = http.post(path, json=body, headers={"Authorization": "Bearer t"})
            assert answer.json() == {"success": True}, answer.text
        assert latest_id(http, "db.java") == 2
        rows = [
            c for c in history(http, "db.java", oldest_first=True) if c["commitUser"] == first.commit_user
        ]
        assert [c["snapshots"] for c in rows] == [
            [{"id": 1, "commitKind": "APPEND"}, {"id": 2, "commitKind": "COMPACT"}]
        ]
        files = http.get("/tables/db.java/files").json()["files"]
        assert [f["fileName"] for f in files] == [new_name]
    assert sorted(r["id"] for r in read_rows(catalog.get_table("db.java"))) == [0, 1, 2, 3]
