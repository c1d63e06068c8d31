"""Replicas that advertise their URL forward a commit to the replica holding its table's lock.

Real `coordinator serve` processes on one PostgreSQL database and one warehouse. Where a test needs the
lock held at a known moment, it writes the lock row itself, as a holder would: the owner, a live lease
and the URL the holder answers at.

A replica asks where a table's lock is held only once it has found that lock held by another (asking is
a round trip a table written through one replica never needs): the first commit waits for the lock, and
the tests below first let the replica meet the held lock that way.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sqlalchemy import create_engine, text

from tests.support.commits import append_commit
from tests.support.databases import postgres_database
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows
from tests.support.rest_writers import CATALOG_NAME, create_rest_table, prepare, rest_catalog
from tests.support.served import ServedCoordinator, free_port

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

TABLE = "sales.events"
FIELDS = {"dt": "STRING", "id": "BIGINT"}
ENV = {"COORDINATOR_LOCK_ACQUIRE_TIMEOUT_SECONDS": "60", "COORDINATOR_LOG_FORMAT": "json"}


@pytest.fixture
def database() -> Iterator[str]:
    with postgres_database("coordinator_forwarding") as url:
        yield url


@pytest.fixture
def replicas(database: str, warehouse: Path, tmp_path: Path) -> Iterator[list[ServedCoordinator]]:
    """Two advertising replicas, A (which migrated the database) and B."""
    started: list[ServedCoordinator] = []
    try:
        for name in "ab":
            replica = ServedCoordinator(
                database, warehouse, tmp_path / f"{name}.log", advertise=True, env=ENV
            )
            started.append(replica)
            replica.wait_healthy()
        yield started
    finally:
        for replica in started:
            replica.stop()


def commit_body(table: PaimonTable, ids: range) -> dict[str, Any]:
    return append_commit(table, [{"dt": "2024-01-01", "id": i} for i in ids], identifier=1)


def events_table(replica: ServedCoordinator) -> PaimonTable:
    database, name = TABLE.split(".")
    return create_table(replica.http, database, name, FIELDS, partitionKeys=["dt"])


def held_for_a_second(database: str, table_id: str, holder_url: str) -> threading.Timer:
    """The table's lock held by the holder at `holder_url` (a long lease), released after a second."""
    hold_lock(database, table_id, holder_url, lease_ms=60_000)
    return release_lock_after(database, table_id, 1.0)


def hold_lock(database: str, table_id: str, holder_url: str, *, lease_ms: int) -> None:
    """Take the table's lock as a holder answering at `holder_url` would."""
    engine = create_engine(database)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO locks (lock_id, owner, epoch, acquired_at_ms, expires_at_ms, holder_url) "
                "VALUES (:id, 'test-holder', 1, 0, :expires, :url) ON CONFLICT (lock_id) DO UPDATE SET "
                "owner = 'test-holder', epoch = locks.epoch + 1, expires_at_ms = :expires, holder_url = :url"
            ),
            {
                "id": f"table:{table_id}",
                "url": holder_url,
                "expires": _now_ms(conn) + lease_ms,
            },
        )
    engine.dispose()


def release_lock_after(database: str, table_id: str, seconds: float) -> threading.Timer:
    def release() -> None:
        engine = create_engine(database)
        with engine.begin() as conn:
            conn.execute(
                text(
                    "UPDATE locks SET owner = NULL, expires_at_ms = 0 "
                    "WHERE lock_id = :id AND owner = 'test-holder'"
                ),
                {"id": f"table:{table_id}"},
            )
        engine.dispose()

    timer = threading.Timer(seconds, release)
    timer.start()
    return timer


def _now_ms(conn: Any) -> int:
    """The database clock, which leases are measured on."""
    now = conn.execute(text("SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"))
    return int(now.scalar_one())


def found_held_elsewhere(
    replica: ServedCoordinator, database: str, table: PaimonTable, holder_url: str, *, row: int = 1000
) -> None:
    """Let `replica` meet the table's lock held by the holder at `holder_url`: its commit (of `row`) waits
    for the lock, is made there, and is not sent on."""
    release = held_for_a_second(database, table.id, holder_url)
    response = replica.http.post(f"/tables/{table.id}/commits", json=commit_body(table, range(row, row + 1)))
    release.join()
    assert response.status_code == 201, response.text
    assert forwarded(replica, "answered") == forwarded(replica, "unreachable") == 0


def forwarded(replica: ServedCoordinator, result: str) -> float:
    """coordinator_commits_forwarded_total{result=...} as the replica's /metrics say."""
    metrics = replica.http.get("/metrics").text
    found = re.search(rf'^coordinator_commits_forwarded_total\{{result="{result}"\}} (\S+)$', metrics, re.M)
    return float(found.group(1)) if found else 0.0


def commit_posts(replica: ServedCoordinator, path: str) -> int:
    """How many POSTs to `path` the replica's access log shows."""
    lines = [json.loads(line) for line in replica.log.read_text().splitlines() if line.startswith("{")]
    return sum(1 for line in lines if line.get("method") == "POST" and line.get("path") == path)


def test_a_commit_reaching_a_replica_that_does_not_hold_the_lock_is_committed_by_the_holder(
    replicas: list[ServedCoordinator], database: str, warehouse: Path
) -> None:
    a, b = replicas
    table = events_table(a)
    found_held_elsewhere(b, database, table, a.url)
    release = held_for_a_second(database, table.id, a.url)  # A holds it; its next commit waits for the test
    held = b.http.get("/locks").json()["locks"]
    assert [(lock["tableId"], lock["holderUrl"]) for lock in held] == [(table.id, a.url)]

    response = b.http.post(f"/tables/{table.id}/commits", json=commit_body(table, range(10)))

    release.join()
    assert response.status_code == 201, response.text
    assert response.json()["snapshots"][0]["id"] == 2
    assert forwarded(b, "answered") == 1
    assert commit_posts(a, f"/tables/{table.id}/commits") == 1  # B's, passed on
    assert sorted(r["id"] for r in pypaimon_rows(warehouse, table.id)) == [*range(10), 1000]


def test_a_replica_that_never_found_the_lock_held_elsewhere_does_not_ask_where_it_is(
    replicas: list[ServedCoordinator], database: str
) -> None:
    a, b = replicas
    table = events_table(a)
    b_commits = f"/tables/{table.id}/commits"
    for first in (0, 10):  # B alone writes the table: no question, no forwarding
        assert b.http.post(b_commits, json=commit_body(table, range(first, first + 10))).status_code == 201

    found_held_elsewhere(b, database, table, a.url)  # now B has met it held, and waited

    assert commit_posts(a, b_commits) == 0


def test_a_forwarded_commit_is_never_passed_on_again(
    replicas: list[ServedCoordinator], database: str
) -> None:
    a, b = replicas
    table = events_table(a)
    release = held_for_a_second(database, table.id, a.url)

    # As if A had forwarded it here: B waits for the lock instead of sending it back to A.
    response = b.http.post(
        f"/tables/{table.id}/commits",
        json=commit_body(table, range(5)),
        headers={"X-Coordinator-Forwarded-By": a.url},
    )

    release.join()
    assert response.status_code == 201, response.text
    assert forwarded(b, "answered") == forwarded(b, "unreachable") == 0
    assert commit_posts(a, f"/tables/{table.id}/commits") == 0


def test_a_holder_that_cannot_be_reached_is_not_waited_for_the_commit_is_made_here(
    replicas: list[ServedCoordinator], database: str, warehouse: Path
) -> None:
    a, b = replicas
    table = events_table(a)
    nobody = f"http://127.0.0.1:{free_port()}"
    found_held_elsewhere(b, database, table, nobody)
    hold_lock(database, table.id, nobody, lease_ms=1_500)  # a holder that died: its lease runs out

    response = b.http.post(f"/tables/{table.id}/commits", json=commit_body(table, range(7)))

    assert response.status_code == 201, response.text
    assert forwarded(b, "unreachable") == 1
    assert sorted(r["id"] for r in pypaimon_rows(warehouse, table.id)) == [*range(7), 1000]


def test_writers_on_both_replicas_share_the_holders_groups_and_every_commit_lands_once(
    replicas: list[ServedCoordinator], database: str, warehouse: Path
) -> None:
    a, b = replicas
    table = events_table(a)
    # Each replica has met the table's lock held by the other (snapshots 1 and 2), so each asks where it
    # is held while the writers run; and the writers start while A holds it, as under a steady load one
    # replica does, so B's first commits go to A's group.
    found_held_elsewhere(a, database, table, b.url, row=1000)
    found_held_elsewhere(b, database, table, a.url, row=1001)
    release = held_for_a_second(database, table.id, a.url)
    writers, commits = 8, 8
    answers: list[dict[str, Any]] = []
    errors: list[str] = []
    start = threading.Barrier(writers)

    def write(k: int) -> None:
        replica = replicas[k % 2]
        start.wait()
        for j in range(commits):
            first = (k * commits + j) * 10
            body = commit_body(table, range(first, first + 10))
            response = replica.http.post(f"/tables/{table.id}/commits", json=body)
            if response.status_code != 201:
                errors.append(f"{response.status_code} {response.text[:300]}")
            else:
                answers.append(response.json())

    threads = [threading.Thread(target=write, args=(k,)) for k in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    release.join()

    assert errors == []
    snapshot_ids = sorted(s["id"] for answer in answers for s in answer["snapshots"])
    assert snapshot_ids == list(range(3, writers * commits + 3))  # one snapshot each, none twice
    rows = sorted(r["id"] for r in pypaimon_rows(warehouse, table.id))
    assert rows == [*range(writers * commits * 10), 1000, 1001]
    assert forwarded(a, "answered") + forwarded(b, "answered") > 0


def test_a_paimon_engines_rest_commit_is_forwarded_to_the_holder_too(
    replicas: list[ServedCoordinator], database: str, warehouse: Path
) -> None:
    a, b = replicas
    catalog = rest_catalog(b.url)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64())])
    table = create_rest_table(catalog, "sales.rest_events", schema, partition_keys=["dt"])
    rest_commit = f"/v1/{CATALOG_NAME}/databases/sales/tables/rest_events/commit"
    for ids in ([0], [1, 2, 3]):  # the first meets the lock held and waits; the second is sent on
        commit, messages = prepare(
            table, pa.table({"dt": ["2024-01-01"] * len(ids), "id": ids}, schema=schema)
        )
        release = held_for_a_second(database, "sales.rest_events", a.url)

        commit.commit(messages)  # pypaimon's own POST .../commit, to B

        release.join()
    assert forwarded(b, "answered") == 1
    assert commit_posts(a, rest_commit) == 1
    assert sorted(r["id"] for r in pypaimon_rows(warehouse, "sales.rest_events")) == [0, 1, 2, 3]
