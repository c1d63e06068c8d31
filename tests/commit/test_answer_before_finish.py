"""A commit is answered once it stands, without waiting for its finish (usecases/hold_ends.py).

The finish (snapshots marked published, the history's timings, the lock released) is slowed for real: a
trigger on PostgreSQL sleeps in every update of a history row, which only the finish makes. The answer
must come long before the finish is over; yet everything a writer reads back sees its commit finished
or standing:
- through the replica it committed through: the history with its timings, the lock released (both
  wait for the finish there), and the next commit to the table;
- through another replica, while the finish still runs: Paimon's REST door serves the new snapshot,
  whose row is not marked published yet (its file on storage is what counts).
A finish that fails (the trigger raises) leaves the commit answered and standing, is counted, and
leaves the table free: the next commit marks the snapshot published.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, create_engine, text

from coordinator.settings import Settings
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows
from tests.support.rest_writers import CATALOG_NAME
from tests.support.served import LiveServer

pytestmark = pytest.mark.parametrize("database_url", ["postgres"], indirect=True)

SLOW_FINISH_SECONDS = 2.0
"""How long the trigger holds the finish: far beyond a commit's answer (milliseconds)."""

AUTH = {"Authorization": "Bearer any-token"}


SLOW = f"PERFORM pg_sleep({SLOW_FINISH_SECONDS}); RETURN NEW;"
"""The trigger's body that holds the finish SLOW_FINISH_SECONDS."""
FAILING = "RAISE EXCEPTION 'the finish fails here';"
"""The trigger's body that makes the finish fail."""


@contextmanager
def in_the_finish(database_url: str, body: str) -> Iterator[None]:
    """Every update of a history row (which only the finish makes: the commits' timings) runs `body`,
    PL/pgSQL, until the block ends."""
    with engine_of(database_url) as engine, engine.begin() as conn:
        conn.execute(
            text(
                f"CREATE FUNCTION in_the_finish() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body} END $$"
            )
        )
        conn.execute(
            text(
                "CREATE TRIGGER in_the_finish BEFORE UPDATE ON commits "
                "FOR EACH ROW EXECUTE FUNCTION in_the_finish()"
            )
        )
    try:
        yield
    finally:
        with engine_of(database_url) as engine, engine.begin() as conn:
            conn.execute(text("DROP TRIGGER in_the_finish ON commits"))
            conn.execute(text("DROP FUNCTION in_the_finish()"))


@contextmanager
def engine_of(database_url: str) -> Iterator[Engine]:
    engine = create_engine(database_url)
    try:
        yield engine
    finally:
        engine.dispose()


def published(database_url: str, table_id: str, snapshot_id: int) -> bool:
    """Whether the snapshot's row is marked published (by the finish)."""
    with engine_of(database_url) as engine, engine.connect() as conn:
        marked = conn.execute(
            text("SELECT published FROM snapshots WHERE table_id = :t AND snapshot_id = :s"),
            {"t": table_id, "s": snapshot_id},
        )
        return bool(marked.scalar_one())


def one_file(table: PaimonTable, identifier: int) -> dict[str, Any]:
    row = {"id": identifier}
    return {
        "commitUser": "writer",
        "identifier": identifier,
        "messages": [table.message(row, newFiles=[table.append_file([row])])],
    }


def test_the_answer_does_not_wait_for_the_finish_and_reads_see_the_commit(
    settings: Settings, database_url: str
) -> None:
    with (
        LiveServer(settings) as here,
        LiveServer(settings) as there,
        httpx.Client(base_url=here.url, timeout=60) as http,
        httpx.Client(base_url=there.url, timeout=60) as other,
    ):
        name = f"t_{uuid.uuid4().hex[:8]}"
        table = create_table(http, "db", name, {"id": "BIGINT"})
        first = http.post(f"/tables/{table.id}/commits", json=one_file(table, 1))
        assert first.status_code == 201, first.text

        with in_the_finish(database_url, SLOW):
            asked = time.monotonic()
            second = http.post(f"/tables/{table.id}/commits", json=one_file(table, 2))
            answered = time.monotonic() - asked
            assert second.status_code == 201, second.text
            assert [s["id"] for s in second.json()["snapshots"]] == [2]
            assert answered < SLOW_FINISH_SECONDS / 2, f"the answer waited {answered:.2f} s for the finish"

            # Another replica, while the finish still runs: the snapshot is served though not marked.
            head = other.get(f"/v1/{CATALOG_NAME}/databases/db/tables/{name}/snapshot", headers=AUTH)
            assert head.status_code == 200, head.text
            assert head.json()["snapshot"]["snapshot"]["id"] == 2
            assert not published(database_url, table.id, 2), "the finish ran before the read: nothing shown"

            # The replica it committed through waits for the finish before it shows history and locks.
            history = http.get(f"/tables/{table.id}/commits").json()["commits"]
            finished = time.monotonic() - asked
            assert finished >= SLOW_FINISH_SECONDS
            latest = history[0]
            assert (latest["identifier"], latest["outcome"]) == (2, "committed")
            assert latest["timings"]["total"] > 0
            assert published(database_url, table.id, 2)
            locks = http.get("/locks").json()["locks"]
            assert [lock for lock in locks if lock["tableId"] == table.id] == []

        third = http.post(f"/tables/{table.id}/commits", json=one_file(table, 3))
        assert third.status_code == 201, third.text
        assert [s["id"] for s in third.json()["snapshots"]] == [3]
    assert pypaimon_rows(settings.warehouse, table.id) == [{"id": 1}, {"id": 2}, {"id": 3}]


def finish_failures(http: httpx.Client) -> float:
    for line in http.get("/metrics").text.splitlines():
        if line.startswith('coordinator_post_commit_failures_total{step="finish"}'):
            return float(line.split()[-1])
    return 0.0


def test_a_failed_finish_leaves_the_commit_standing_and_the_table_free(
    settings: Settings, database_url: str
) -> None:
    with LiveServer(settings) as here, httpx.Client(base_url=here.url, timeout=60) as http:
        table = create_table(http, "db", f"t_{uuid.uuid4().hex[:8]}", {"id": "BIGINT"})
        assert http.post(f"/tables/{table.id}/commits", json=one_file(table, 1)).status_code == 201

        with in_the_finish(database_url, FAILING):
            second = http.post(f"/tables/{table.id}/commits", json=one_file(table, 2))
            assert second.status_code == 201, second.text
            deadline = time.monotonic() + 10
            while finish_failures(http) < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert finish_failures(http) == 1
            assert not published(database_url, table.id, 2)
            # Released by the hold's end all the same: the next commit does not wait for the lease.
            locks = http.get("/locks").json()["locks"]
            assert [lock for lock in locks if lock["tableId"] == table.id] == []

        asked = time.monotonic()
        third = http.post(f"/tables/{table.id}/commits", json=one_file(table, 3))
        assert third.status_code == 201, third.text
        assert time.monotonic() - asked < settings.lock_lease_seconds
        assert [s["id"] for s in third.json()["snapshots"]] == [3]
        assert published(database_url, table.id, 2)
        assert published(database_url, table.id, 3)
        committed = [c["identifier"] for c in http.get(f"/tables/{table.id}/commits").json()["commits"]]
        assert committed == [3, 2, 1]
    assert pypaimon_rows(settings.warehouse, table.id) == [{"id": 1}, {"id": 2}, {"id": 3}]
