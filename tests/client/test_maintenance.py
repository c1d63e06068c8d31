"""The client's maintenance API and the `coordinator-client` command, against a real server.

Every call goes over HTTP to uvicorn (the `live_server` fixture) on SQLite and PostgreSQL, and the calls
that change storage also on S3; what the service did is checked on storage, in the history and through
pypaimon, not only in the answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from coordinator_client import (
    AsyncCoordinatorClient,
    BadRequest,
    CommitRecordModel,
    Conflict,
    CoordinatorClient,
    NotFound,
)
from coordinator_client.cli import main
from tests.support import REPO
from tests.support.paimon_files import (
    PaimonTable,
    create_table,
    file_exists,
    file_names,
    make_old,
    pypaimon_rows,
    read_text,
    sorted_rows,
    write_bytes,
)
from tests.support.served import LiveServer

DT = "2024-01-01"
USER = "ops-alice"
TWO_DAYS = 2 * 86_400


@pytest.fixture
def client(live_server: LiveServer) -> Iterator[CoordinatorClient]:
    with CoordinatorClient(live_server.url, timeout=60, user=USER) as c:
        yield c


def _table(http: httpx.Client, name: str = "t") -> PaimonTable:
    return create_table(http, "db", name, {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"])


def _rows(start: int, count: int) -> list[dict[str, Any]]:
    return [{"dt": DT, "id": i} for i in range(start, start + count)]


def _append(client: CoordinatorClient, table: PaimonTable, rows: list[dict[str, Any]]) -> int:
    """Commit one data file of `rows`; the new snapshot's id."""
    message = table.append_message(rows)
    commit = {"commitUser": f"writer-{uuid.uuid4()}", "identifier": 2**63 - 1, "messages": [message]}
    return client.commit(table.id, commit).snapshots[-1].id


def _data_files(table: PaimonTable) -> set[str]:
    return set(file_names(f"{table.location}/dt={DT}/bucket-0"))


def _actions(client: CoordinatorClient, table_id: str) -> list[CommitRecordModel]:
    """The maintenance records of the history, newest first."""
    return [c for c in client.commit_history(table_id).commits if c.action != "commit"]


def _plant(table: PaimonTable, name: str) -> str:
    """A file no snapshot names, just written; its location."""
    location = f"{table.location}/dt={DT}/bucket-0/{name}"
    write_bytes(location, b"left behind by a writer that died")
    return location


# ---------------------------------------------------------------- the client


@pytest.mark.stores("local", "s3")
def test_set_options_writes_a_schema_version_and_expire_applies_it(
    client: CoordinatorClient, http: httpx.Client, warehouse_location: str
) -> None:
    table = _table(http)
    rows = [_rows(10 * i, 3) for i in range(4)]
    assert [_append(client, table, r) for r in rows] == [1, 2, 3, 4]
    nothing = client.expire(table.id)  # the defaults keep at least 10 snapshots
    assert (nothing.expired_snapshots, nothing.batches, nothing.earliest_snapshot_id) == (0, 0, 1)

    retention = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"}
    changed = client.set_options(table.id, {**retention, "write-buffer-size": "64 mb"})
    assert changed.schema_.id == 1
    assert changed.schema_.options.items() >= {**retention, "write-buffer-size": "64 mb"}.items()
    assert changed.latest_snapshot_id == 4
    removed = client.set_options(table.id, remove=["write-buffer-size"])
    assert removed.schema_.id == 2
    assert "write-buffer-size" not in removed.schema_.options
    assert file_exists(f"{table.location}/schema/schema-2")

    expired = client.expire(table.id)
    assert expired.expired_snapshots == 2
    assert (expired.earliest_snapshot_id, expired.latest_snapshot_id) == (3, 4)
    assert expired.deleted.snapshots == 2
    assert expired.deleted.data_files == 0  # an append table's snapshots only ever add files
    assert [s.id for s in client.list_snapshots(table.id).snapshots] == [4, 3]
    assert not file_exists(f"{table.location}/snapshot/snapshot-2")
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows([r for batch in rows for r in batch])

    records = _actions(client, table.id)
    assert [(r.action, r.commit_user, r.outcome) for r in records] == [
        ("expire", USER, "done"),
        ("set-options", USER, "done"),
        ("set-options", USER, "done"),
    ]
    assert records[1].details == {"schemaId": 2, "set": {}, "removed": ["write-buffer-size"]}


def test_set_options_refusals_name_the_option(client: CoordinatorClient, http: httpx.Client) -> None:
    table = _table(http)
    with pytest.raises(BadRequest) as fixed:
        client.set_options(table.id, {"bucket": "4"})
    assert (fixed.value.status_code, fixed.value.code) == (422, "INVALID_REQUEST")
    assert fixed.value.field == "set.bucket"
    assert "'bucket'" in fixed.value.message
    with pytest.raises(BadRequest) as invalid:
        client.set_options(table.id, {"snapshot.num-retained.min": "zero"})
    assert invalid.value.field == "set.snapshot.num-retained.min"
    assert "'zero'" in invalid.value.message
    assert client.get_table(table.id).schema_.id == 0  # nothing was written


def test_without_a_user_the_history_names_the_api(live_server: LiveServer, http: httpx.Client) -> None:
    table = _table(http)
    with CoordinatorClient(live_server.url, timeout=60) as anonymous:
        anonymous.set_options(table.id, {"k": "v"})
        assert [r.commit_user for r in _actions(anonymous, table.id)] == ["api"]


@pytest.mark.stores("local", "s3")
def test_tags_then_rollback_to_a_tag_and_to_a_snapshot(
    client: CoordinatorClient, http: httpx.Client, warehouse_location: str
) -> None:
    table = _table(http)
    first, second, third = _rows(0, 2), _rows(100, 3), _rows(200, 4)
    for rows in (first, second, third):
        _append(client, table, rows)
    kept = _data_files(table)  # three data files

    v1 = client.create_tag(table.id, "v1", snapshot_id=1)
    assert (v1.name, v1.snapshot_id, v1.schema_id, v1.record_count) == ("v1", 1, 0, 2)
    head = client.create_tag(table.id, "head")  # the latest by default
    assert (head.snapshot_id, head.record_count) == (3, 9)
    assert head.commit_time == client.get_snapshot(table.id, 3).time_millis
    assert [(t.name, t.snapshot_id) for t in client.list_tags(table.id).tags] == [("head", 3), ("v1", 1)]
    assert file_exists(f"{table.location}/tag/tag-v1")

    with pytest.raises(Conflict) as taken:
        client.create_tag(table.id, "v1")
    assert (taken.value.status_code, taken.value.code) == (409, "TAG_ALREADY_EXISTS")
    assert "'v1'" in taken.value.message
    assert taken.value.conflict is None
    with pytest.raises(NotFound) as no_snapshot:
        client.create_tag(table.id, "later", snapshot_id=99)
    assert no_snapshot.value.code == "SNAPSHOT_NOT_FOUND"
    assert "99" in no_snapshot.value.message

    back = client.rollback(table.id, tag="v1")
    assert back.latest_snapshot_id == 1
    assert back.removed_snapshots == [2, 3]
    assert back.removed_tags == ["head"]
    assert (back.deleted.snapshots, back.deleted.data_files) == (2, 2)
    assert client.latest_snapshot(table.id).id == 1
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(first)
    assert len(_data_files(table)) == 1
    assert _data_files(table) < kept
    assert [t.name for t in client.list_tags(table.id).tags] == ["v1"]

    fourth, fifth = _rows(300, 1), _rows(400, 5)
    assert _append(client, table, fourth) == 2  # the next commit follows the rollback target
    assert _append(client, table, fifth) == 3
    to_two = client.rollback(table.id, snapshot_id=2)
    assert (to_two.latest_snapshot_id, to_two.removed_snapshots, to_two.removed_tags) == (2, [3], [])
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(first + fourth)

    dropped = client.delete_tag(table.id, "v1")
    assert dropped.name == "v1"
    assert dropped.deleted.data_files == 0  # snapshot 1 is still retained and holds its file
    assert client.list_tags(table.id).tags == []
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(first + fourth)

    records = _actions(client, table.id)
    assert [r.action for r in records] == ["delete-tag", "rollback", "rollback", "create-tag", "create-tag"]
    assert {r.commit_user for r in records} == {USER}
    assert records[2].details is not None
    assert records[2].details["to"] == {"snapshotId": 1, "tag": "v1"}


def test_rollback_and_tag_refusals(client: CoordinatorClient, http: httpx.Client) -> None:
    table = _table(http)
    _append(client, table, _rows(0, 1))
    targets: list[dict[str, Any]] = [{}, {"snapshot_id": 1, "tag": "v1"}]
    for target in targets:
        with pytest.raises(BadRequest) as ambiguous:
            client.rollback(table.id, **target)
        assert ambiguous.value.field == "snapshotId"
        assert "exactly one" in ambiguous.value.message
    with pytest.raises(NotFound) as no_tag:
        client.rollback(table.id, tag="nope")
    assert no_tag.value.code == "TAG_NOT_FOUND"
    assert "'nope'" in no_tag.value.message
    with pytest.raises(NotFound) as no_snapshot:
        client.rollback(table.id, snapshot_id=7)
    assert no_snapshot.value.code == "SNAPSHOT_NOT_FOUND"
    with pytest.raises(NotFound) as gone:
        client.delete_tag(table.id, "nope")
    assert gone.value.code == "TAG_NOT_FOUND"
    assert "'nope'" in gone.value.message
    assert client.latest_snapshot(table.id).id == 1


@pytest.mark.stores("local", "s3")
def test_consumers_hold_back_expiration(client: CoordinatorClient, http: httpx.Client) -> None:
    table = _table(http)
    for i in range(4):
        _append(client, table, _rows(i * 10, 2))
    before = time.time()
    reader = client.set_consumer(table.id, "reader", 3)
    assert (reader.consumer_id, reader.next_snapshot_id) == ("reader", 3)
    assert before - 5 <= reader.modified_at <= time.time() + 5
    assert client.set_consumer(table.id, "audit", 4).next_snapshot_id == 4
    moved = client.set_consumer(table.id, "reader", 2)
    assert moved.next_snapshot_id == 2
    listed = client.list_consumers(table.id).consumers
    assert [(c.consumer_id, c.next_snapshot_id) for c in listed] == [("audit", 4), ("reader", 2)]
    assert json.loads(read_text(f"{table.location}/consumer/consumer-reader")) == {"nextSnapshot": 2}

    client.set_options(table.id, {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    held = client.expire(table.id)
    assert (held.expired_snapshots, held.earliest_snapshot_id) == (1, 2)  # "reader" still needs 2
    client.delete_consumer(table.id, "reader")
    assert [c.consumer_id for c in client.list_consumers(table.id).consumers] == ["audit"]
    freed = client.expire(table.id)
    assert (freed.expired_snapshots, freed.earliest_snapshot_id, freed.latest_snapshot_id) == (2, 4, 4)

    with pytest.raises(BadRequest) as expired:
        client.set_consumer(table.id, "late", 1)
    assert expired.value.field == "nextSnapshotId"
    assert "(4)" in expired.value.message
    with pytest.raises(BadRequest) as beyond:
        client.set_consumer(table.id, "early", 99)
    assert beyond.value.field == "nextSnapshotId"
    with pytest.raises(NotFound) as ghost:
        client.delete_consumer(table.id, "ghost")
    assert ghost.value.code == "CONSUMER_NOT_FOUND"
    assert "'ghost'" in ghost.value.message
    assert [r.action for r in _actions(client, table.id)][:4] == [
        "expire",
        "delete-consumer",
        "expire",
        "set-options",
    ]


@pytest.mark.stores("local", "s3")
def test_clean_orphans_lists_then_deletes_only_old_unreferenced_files(
    client: CoordinatorClient, http: httpx.Client, warehouse_location: str
) -> None:
    table = _table(http)
    rows = _rows(0, 5)
    _append(client, table, rows)
    committed = _data_files(table)
    old = _plant(table, "data-old-orphan.parquet")
    # Committed files are referenced, however old.
    bucket = f"{table.location}/dt={DT}/bucket-0"
    s3_age = make_old([old, *(f"{bucket}/{name}" for name in committed)], TWO_DAYS)
    young = _plant(table, "data-young-orphan.parquet")
    if s3_age is None:
        make_old([young], 60)
    # Locally: two days and a minute old, told apart by the default (a day) and by 30 seconds; on S3 by
    # make_old's age and by none.
    threshold: dict[str, float] = {} if s3_age is None else {"older_than_seconds": s3_age}

    dry = client.clean_orphans(table.id, dry_run=True, **threshold)
    assert dry.dry_run
    assert dry.files == [f"dt={DT}/bucket-0/data-old-orphan.parquet"]
    assert file_exists(old)
    assert _actions(client, table.id) == []  # a dry run changes nothing and records nothing
    younger = client.clean_orphans(table.id, older_than_seconds=30 if s3_age is None else 0, dry_run=True)
    assert younger.files == [
        f"dt={DT}/bucket-0/{n}" for n in ("data-old-orphan.parquet", "data-young-orphan.parquet")
    ]

    cleaned = client.clean_orphans(table.id, dry_run=False, **threshold)
    assert not cleaned.dry_run
    assert cleaned.files == dry.files
    assert not file_exists(old)
    assert file_exists(young)
    assert _data_files(table) == committed | {"data-young-orphan.parquet"}
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(rows)
    [record] = _actions(client, table.id)
    assert (record.action, record.commit_user, record.outcome) == ("clean-orphans", USER, "done")
    older_than = 86_400.0 if s3_age is None else s3_age
    assert record.details == {"olderThanSeconds": older_than, "files": dry.files}


def test_every_maintenance_call_on_a_missing_table_is_not_found(client: CoordinatorClient) -> None:
    calls: dict[str, Callable[[], object]] = {
        "set_options": lambda: client.set_options("db.missing", {"k": "v"}),
        "expire": lambda: client.expire("db.missing"),
        "list_tags": lambda: client.list_tags("db.missing"),
        "create_tag": lambda: client.create_tag("db.missing", "v1"),
        "delete_tag": lambda: client.delete_tag("db.missing", "v1"),
        "rollback": lambda: client.rollback("db.missing", snapshot_id=1),
        "list_consumers": lambda: client.list_consumers("db.missing"),
        "set_consumer": lambda: client.set_consumer("db.missing", "c", 1),
        "delete_consumer": lambda: client.delete_consumer("db.missing", "c"),
        "clean_orphans": lambda: client.clean_orphans("db.missing", dry_run=True),
    }
    for name, call in calls.items():
        with pytest.raises(NotFound) as missing:
            call()
        assert missing.value.code == "TABLE_NOT_FOUND", name
        assert "db.missing" in missing.value.message, name


@pytest.mark.anyio
async def test_the_async_client_has_the_same_maintenance_calls(
    live_server: LiveServer, http: httpx.Client, warehouse: Path
) -> None:
    table = _table(http)
    with CoordinatorClient(live_server.url, timeout=60) as writer:
        for i in range(3):
            _append(writer, table, _rows(i * 10, 2))
    async with AsyncCoordinatorClient(live_server.url, timeout=60, user="async-bob") as client:
        assert (await client.set_options(table.id, {"k": "v"}, remove=["absent"])).schema_.options["k"] == "v"
        assert (await client.expire(table.id)).expired_snapshots == 0
        assert (await client.create_tag(table.id, "v2", 2)).record_count == 4
        assert [t.name for t in (await client.list_tags(table.id)).tags] == ["v2"]
        assert (await client.set_consumer(table.id, "c", 3)).next_snapshot_id == 3
        assert [c.consumer_id for c in (await client.list_consumers(table.id)).consumers] == ["c"]
        await client.delete_consumer(table.id, "c")
        with pytest.raises(NotFound):
            await client.delete_consumer(table.id, "c")
        back = await client.rollback(table.id, snapshot_id=2)
        assert (back.latest_snapshot_id, back.removed_snapshots) == (2, [3])
        assert (await client.delete_tag(table.id, "v2")).name == "v2"
        orphan = _plant(table, "data-orphan.parquet")
        make_old([orphan], TWO_DAYS)
        assert (await client.clean_orphans(table.id, older_than_seconds=3600)).files == [
            f"dt={DT}/bucket-0/data-orphan.parquet"
        ]
        history = (await client.commit_history(table.id)).commits
    assert not file_exists(orphan)
    assert pypaimon_rows(warehouse, table.id) == sorted_rows(_rows(0, 2) + _rows(10, 2))
    assert {c.commit_user for c in history if c.action != "commit"} == {"async-bob"}


# ---------------------------------------------------------------- the command line


def _cli(capsys: pytest.CaptureFixture[str], url: str, *argv: str) -> Any:
    """Run the command successfully; its stdout parsed as JSON (None when it printed nothing)."""
    assert main(["--url", url, "--user", "cli-carol", *argv]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if out else None


def test_cli_runs_every_subcommand(
    live_server: LiveServer, http: httpx.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    url = live_server.url
    table = _table(http)
    with CoordinatorClient(url, timeout=60) as writer:
        for i in range(3):
            _append(writer, table, _rows(i * 10, 3))

    options = _cli(capsys, url, "options", table.id, "--set", "a=1", "b=x=y", "--set", "c=", "--remove", "z")
    assert options["schema"]["id"] == 1
    assert options["schema"]["options"].items() >= {"a": "1", "b": "x=y", "c": ""}.items()
    assert options["latestSnapshotId"] == 3
    tag = _cli(capsys, url, "tags", "create", table.id, "v1", "--snapshot", "1")
    assert (tag["name"], tag["snapshotId"], tag["recordCount"]) == ("v1", 1, 3)
    assert _cli(capsys, url, "tags", "create", table.id, "head")["snapshotId"] == 3
    tags = _cli(capsys, url, "tags", "list", table.id)
    assert [(t["name"], t["snapshotId"]) for t in tags["tags"]] == [("head", 3), ("v1", 1)]
    assert _cli(capsys, url, "tags", "delete", table.id, "head")["name"] == "head"

    consumer = _cli(capsys, url, "consumers", "set", table.id, "reader", "2")
    assert (consumer["consumerId"], consumer["nextSnapshotId"]) == ("reader", 2)
    assert [c["consumerId"] for c in _cli(capsys, url, "consumers", "list", table.id)["consumers"]] == [
        "reader"
    ]
    assert _cli(capsys, url, "consumers", "delete", table.id, "reader") is None
    assert _cli(capsys, url, "consumers", "list", table.id) == {"consumers": []}

    expired = _cli(capsys, url, "expire", table.id)
    assert (expired["expiredSnapshots"], expired["earliestSnapshotId"]) == (0, 1)
    back = _cli(capsys, url, "rollback", table.id, "--snapshot", "2")
    assert (back["latestSnapshotId"], back["removedSnapshots"]) == (2, [3])
    assert _cli(capsys, url, "rollback", table.id, "--tag", "v1")["latestSnapshotId"] == 1

    orphan = _plant(table, "data-orphan.parquet")
    make_old([orphan], TWO_DAYS)
    dry = _cli(capsys, url, "orphans", "clean", table.id, "--dry-run")
    assert dry == {"dryRun": True, "files": [f"dt={DT}/bucket-0/data-orphan.parquet"]}
    assert file_exists(orphan)
    assert _cli(capsys, url, "orphans", "clean", table.id, "--older-than", "3600")["files"] == dry["files"]
    assert not file_exists(orphan)

    with CoordinatorClient(url) as reader:
        users = {c.commit_user for c in reader.commit_history(table.id).commits if c.action != "commit"}
    assert users == {"cli-carol"}


def test_cli_reports_refusals_on_stderr_with_exit_1(
    live_server: LiveServer, http: httpx.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    table = _table(http)
    assert main(["--url", live_server.url, "tags", "delete", table.id, "missing"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "404 TAG_NOT_FOUND" in err
    assert "'missing'" in err

    assert main(["--url", live_server.url, "consumers", "set", table.id, "c", "99"]) == 1
    assert "nextSnapshotId" in capsys.readouterr().err
    assert main(["--url", live_server.url, "rollback", table.id, "--snapshot", "1"]) == 1
    assert "SNAPSHOT_NOT_FOUND" in capsys.readouterr().err
    assert main(["--url", live_server.url, "tags", "create", table.id, "no/slash"]) == 1
    assert "name" in capsys.readouterr().err  # refused by the request model before anything is sent


def test_cli_reads_the_url_from_the_environment(
    live_server: LiveServer,
    http: httpx.Client,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = _table(http)
    monkeypatch.setenv("COORDINATOR_URL", live_server.url)
    assert main(["consumers", "list", table.id]) == 0
    assert json.loads(capsys.readouterr().out) == {"consumers": []}
    monkeypatch.setenv("COORDINATOR_URL", "http://127.0.0.1:1")
    assert main(["consumers", "list", table.id]) == 1
    assert "ConnectError" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["rollback", "db.t"],
        ["rollback", "db.t", "--snapshot", "1", "--tag", "v1"],
        ["options", "db.t", "--set", "novalue"],
        ["consumers", "set", "db.t", "c", "next"],
        ["tags", "db.t"],
        [],
    ],
)
def test_cli_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as usage:
        main(argv)
    assert usage.value.code == 2
    assert "usage: coordinator-client" in capsys.readouterr().err


def test_python_dash_m_runs_the_command(live_server: LiveServer, http: httpx.Client) -> None:
    table = _table(http)
    with CoordinatorClient(live_server.url, timeout=60) as client:
        _append(client, table, _rows(0, 1))
        client.create_tag(table.id, "v1")
    paths = [str(REPO / d) for d in ("format", "client", "service")] + [os.environ.get("PYTHONPATH", "")]
    done = subprocess.run(
        [sys.executable, "-m", "coordinator_client", "--url", live_server.url, "tags", "list", table.id],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [(t["name"], t["snapshotId"]) for t in json.loads(done.stdout)["tags"]] == [("v1", 1)]
