"""A database that is down or restarting: every door answers 503 with Retry-After, never 500, and the
first requests after the restart succeed (issue 28, item 6).

Each test runs its own PostgreSQL server (tests/support/private_postgres.py), since it stops or SIGKILLs
it: the machine's shared server serves the other tests meanwhile.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import create_engine, exc, text

from coordinator.commit.overwrite_watch import OverwriteWatch
from coordinator.db.faults import RETRY_AFTER_SECONDS, unavailable
from coordinator.db.migrate import upgrade
from coordinator.db.repositories import live_files
from coordinator.db.repositories.live_files import COPY_FROM
from coordinator.settings import Settings
from coordinator_client.models import CommitRequest
from paimon_format.snapshot import Snapshot
from tests.support import rest_writer_process
from tests.support.commits import append_commit
from tests.support.paimon_files import PaimonTable, create_table, read_text
from tests.support.pause import PausedCall
from tests.support.private_postgres import PrivatePostgres, private_postgres
from tests.support.rest_writer_process import SCHEMA
from tests.support.rest_writers import create_rest_table, read_rows, rest_catalog
from tests.support.served import LiveServer, ServedCoordinator

pytestmark = pytest.mark.postgres

V1_TABLE = "/v1/paimon/databases/db/tables/t"
FIELDS = {"id": "BIGINT", "writer": "INT"}


@pytest.fixture
def database() -> Iterator[PrivatePostgres]:
    """A PostgreSQL server of this test's own, migrated by Alembic."""
    with private_postgres() as server:
        upgrade(server.url())
        yield server


def settings(database: PrivatePostgres, warehouse: Path, **more: Any) -> Settings:
    return Settings(
        database_url=database.url(),
        warehouse=str(warehouse),
        auto_migrate=False,
        lock_lease_seconds=5,
        lock_acquire_timeout_seconds=20,
        **more,
    )


def native_commit(table: PaimonTable, row_id: int) -> dict[str, Any]:
    """A commit of one new data file (on storage) holding one row."""
    return append_commit(table, [{"id": row_id, "writer": 0}], identifier=1)


def rest_resend(http: httpx.Client, table_id: str, snapshot_id: int) -> dict[str, Any]:
    """POST {T}/commit's body for the snapshot already published as `snapshot_id`: a Java client's
    resend after a lost answer, which the coordinator recognises and answers `success: true`."""
    table = http.get(f"/tables/{table_id}").json()
    snapshot = json.loads(read_text(f"{table['location']}/snapshot/snapshot-{snapshot_id}"))
    return {"tableId": table["uuid"], "baseSnapshotUuid": None, "snapshot": snapshot, "statistics": []}


def assert_native_503(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
    body = response.json()
    assert body["code"] == "DATABASE_UNAVAILABLE"
    assert body["message"]


def assert_rest_503(response: httpx.Response) -> None:
    """Paimon's ErrorResponse, `code` the status: pypaimon and Java read it as ServiceUnavailable."""
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
    body = response.json()
    assert set(body) == {"message", "resourceType", "resourceName", "code"}
    assert body["code"] == 503
    assert body["message"]


def test_with_the_database_down_every_door_answers_503_with_retry_after(
    database: PrivatePostgres, warehouse: Path
) -> None:
    with (
        LiveServer(settings(database, warehouse)) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        table = create_table(http, "db", "t", FIELDS)
        assert http.post("/tables/db.t/commits", json=native_commit(table, 1)).status_code == 201
        resend = rest_resend(http, "db.t", 1)
        assert http.post(f"{V1_TABLE}/commit", json=resend).json() == {"success": True}
        waiting = native_commit(table, 2)

        database.stop()
        assert_native_503(http.post("/tables/db.t/commits", json=waiting))
        assert_native_503(http.get("/tables/db.t"))
        assert_rest_503(http.get(V1_TABLE))
        assert_rest_503(http.get(f"{V1_TABLE}/snapshot"))
        assert_rest_503(http.post(f"{V1_TABLE}/commit", json=resend))

        database.start()
        # The same requests, once the database is back: nothing was half done by the refused ones.
        committed = http.post("/tables/db.t/commits", json=waiting)
        assert committed.status_code == 201, committed.text
        assert [s["id"] for s in committed.json()["snapshots"]] == [2]
        assert http.get("/tables/db.t").json()["latestSnapshotId"] == 2
        assert http.get(V1_TABLE).status_code == 200
        assert http.post(f"{V1_TABLE}/commit", json=resend).json() == {"success": True}


def test_the_first_requests_after_a_database_restart_succeed(
    database: PrivatePostgres, warehouse: Path
) -> None:
    """Nothing touches the database while it restarts, so every pooled connection is one the restart
    broke: each is found out before it is used, and the first requests after it succeed."""
    with (
        LiveServer(settings(database, warehouse)) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        table = create_table(http, "db", "t", FIELDS)
        bodies = [native_commit(table, i) for i in range(16)]

        def commit_and_read(i: int) -> list[int]:
            with httpx.Client(base_url=server.url, timeout=60) as own:
                return [
                    own.post("/tables/db.t/commits", json=bodies[i]).status_code,
                    own.get("/tables/db.t").status_code,
                    own.get(f"{V1_TABLE}/snapshot").status_code,
                ]

        # Several connections in every pool (commits, their bookkeeping and their index probes).
        with ThreadPoolExecutor(8) as threads:
            assert set().union(*threads.map(commit_and_read, range(8))) == {200, 201}
            time.sleep(0.5)  # the last lock releases reach the WAL (the bookkeeping skips the flush)
            database.kill()
            database.start()
            answers = list(threads.map(commit_and_read, range(8, 16)))
        assert all(statuses[0] == 201 and statuses[1:] == [200, 200] for statuses in answers), answers
        assert http.get("/tables/db.t").json()["latestSnapshotId"] == 16


def test_database_faults_are_told_apart_from_errors_of_a_statement(
    database: PrivatePostgres, tmp_path: Path
) -> None:
    """Real errors of both databases: unavailability (refused, restarting, locked) is a 503, a
    statement's own error stays what it is."""
    engine = create_engine(database.url())

    def run(statement: str) -> None:
        with engine.begin() as conn:
            conn.execute(text(statement))

    try:
        run("CREATE TABLE t (id INT PRIMARY KEY)")
        run("INSERT INTO t VALUES (1)")
        with pytest.raises(exc.IntegrityError) as duplicate:
            run("INSERT INTO t VALUES (1)")
        assert unavailable(duplicate.value) is None
        with pytest.raises(exc.ProgrammingError) as missing:
            run("SELECT * FROM no_such_table")
        assert unavailable(missing.value) is None
        database.kill()
        with pytest.raises(exc.OperationalError, match="postmaster exit") as lost:
            run("SELECT 1")  # on the pooled connection the crash ended
        assert lost.value.connection_invalidated
        assert unavailable(lost.value) is not None
        with pytest.raises(exc.OperationalError, match="refused") as refused:
            run("SELECT 1")  # on a new one
        assert unavailable(refused.value) is not None
        with pytest.raises(psycopg.OperationalError) as raw:  # psycopg's own, as under the COPY
            psycopg.connect(host="127.0.0.1", port=database.port, user="postgres", connect_timeout=5)
        assert unavailable(raw.value) is not None
    finally:
        engine.dispose()

    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path)
    holder.execute("CREATE TABLE t (id INTEGER)")
    holder.commit()
    holder.execute("BEGIN EXCLUSIVE")
    sqlite = create_engine(f"sqlite:///{path}", connect_args={"timeout": 0})
    try:
        with (
            pytest.raises(exc.OperationalError, match="database is locked") as locked,
            sqlite.begin() as conn,
        ):
            conn.execute(text("INSERT INTO t VALUES (1)"))
        assert unavailable(locked.value) is not None
    finally:
        sqlite.dispose()
        holder.close()


def test_a_database_killed_during_a_big_commits_copy_is_unavailability(
    database: PrivatePostgres, warehouse: Path
) -> None:
    """The live-file index takes many files by psycopg's COPY, outside SQLAlchemy: a crash there is a
    503 too, and the commit sent again once the database is back goes in once."""
    with (
        LiveServer(settings(database, warehouse)) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        table = create_table(http, "db", "t", FIELDS)
        rows = [{"id": i, "writer": 0} for i in range(COPY_FROM + 20)]
        body = {
            "commitUser": "big-job",
            "identifier": 1,
            "messages": [table.message(rows[0], newFiles=[table.append_file([row]) for row in rows])],
        }
        request = CommitRequest.model_validate(body)
        commit = PausedCall(lambda: server.services.committer.commit("db.t", request), at=live_files._copy)
        commit.start()
        database.kill()
        # Whatever surfaces (psycopg's own error, or SQLAlchemy's on the savepoint), it is unavailability.
        with pytest.raises(Exception) as failed:  # noqa: PT011
            commit.resume()
        assert unavailable(failed.value) is not None, repr(failed.value)
        database.start()
        committed = http.post("/tables/db.t/commits", json=body)
        assert committed.status_code in (200, 201), committed.text
        assert http.get("/tables/db.t").json()["latestSnapshotId"] == 1
        files = http.get("/tables/db.t/files").json()["files"]
        assert len(files) == len(rows)


def test_the_overwrite_watch_outlives_a_database_outage(database: PrivatePostgres, warehouse: Path) -> None:
    """The background thread that compares heads with storage keeps its schedule through an outage."""
    with LiveServer(settings(database, warehouse)) as server:
        services = server.services
        watch = OverwriteWatch(services.engine, services.committer, interval=0.05)
        watch.start()
        try:
            database.stop()
            time.sleep(0.5)  # several passes fail
            database.start()
            assert watch._thread.is_alive()
            passes = watch.check()  # and a pass succeeds again
            assert passes == []
        finally:
            watch.close()


# Two replicas under a load of pypaimon REST writers while the database is SIGKILLed and restarted.

WRITERS = 4
COMMITS = 12
OUTAGE_SECONDS = 1.0
REPLICA_ENV = {
    "COORDINATOR_LOCK_LEASE_SECONDS": "5",
    "COORDINATOR_LOCK_ACQUIRE_TIMEOUT_SECONDS": "60",
    "COORDINATOR_OVERWRITE_CHECK_SECONDS": "0.2",
}


def access_lines(log: Path) -> list[dict[str, Any]]:
    """The replica's access log lines (one per answer: method, path, status)."""
    lines = []
    for line in log.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("logger") == "coordinator.access":
            lines.append(record)
    return lines


@pytest.mark.slow  # writer processes that each start pypaimon
def test_rest_writers_on_two_replicas_lose_nothing_when_the_database_is_killed_and_restarted(
    database: PrivatePostgres, warehouse: Path, tmp_path: Path
) -> None:
    replicas = [
        ServedCoordinator(
            database.url(), warehouse, tmp_path / f"replica-{i}.log", advertise=True, env=REPLICA_ENV
        )
        for i in range(2)
    ]
    try:
        for replica in replicas:
            replica.wait_healthy()
        table = create_rest_table(rest_catalog(replicas[0].url), "db.t", SCHEMA)
        writers = [rest_writer_process.start(replicas[w % 2].url, "db.t", w, COMMITS) for w in range(WRITERS)]
        head = 0
        deadline = time.monotonic() + 300
        while head < WRITERS * COMMITS // 3:  # mid-load: a third of the commits acknowledged
            assert time.monotonic() < deadline, "the writers made no progress"
            assert all(w.poll() is None for w in writers), "a writer ended before the outage"
            time.sleep(0.05)
            head = replicas[0].http.get("/tables/db.t").json()["latestSnapshotId"] or 0

        database.kill()
        time.sleep(OUTAGE_SECONDS)
        database.start()
        # The first requests after the restart, on both replicas and both doors, succeed.
        for replica in replicas:
            assert replica.http.get("/tables/db.t").status_code == 200
            assert replica.http.get(V1_TABLE).status_code == 200
            assert replica.http.get(f"{V1_TABLE}/snapshot").status_code == 200

        for writer in writers:
            out, err = writer.communicate(timeout=300)
            assert writer.returncode == 0, err[-3000:]
            assert out.strip() == str(COMMITS)  # every commit acknowledged, after its retries

        rows = read_rows(table)
        assert sorted(r["id"] for r in rows) == sorted(
            w * 1000 + i for w in range(WRITERS) for i in range(COMMITS)
        )
        described = replicas[0].http.get("/tables/db.t").json()
        latest, location = described["latestSnapshotId"], described["location"]
        snapshots = [
            Snapshot.from_json(read_text(f"{location}/snapshot/snapshot-{i}")) for i in range(1, latest + 1)
        ]
        data = [s for s in snapshots if s.delta_record_count > 0]
        assert len(data) == WRITERS * COMMITS
        assert len({(s.commit_user, s.commit_identifier) for s in data}) == WRITERS * COMMITS
    finally:
        for replica in replicas:
            replica.stop()

    answers = [line for replica in replicas for line in access_lines(replica.log)]
    others = [a for a in answers if not (200 <= a["status"] < 300 or a["status"] in (409, 503))]
    # Besides: GET {T}/snapshot of a table without one yet is 404 SNAPSHOT (the protocol's "empty").
    empty = [
        a for a in others if (a["method"], a["path"], a["status"]) == ("GET", f"{V1_TABLE}/snapshot", 404)
    ]
    assert others == empty
    assert len(empty) <= WRITERS
    assert any(a["status"] == 503 for a in answers)  # the outage was met, and answered as one
    logs = "".join(replica.log.read_text() for replica in replicas)
    assert "Exception in thread" not in logs  # no background thread died of it
