"""The feed under load, across replicas that get killed: a consumer of GET /events ends with exactly the
acknowledged changes, each once, per table in snapshot order.

Two `coordinator serve` replicas on one PostgreSQL database; six writer processes commit to a table of
their own and to one table they all share, every third commit a transaction over both; expirations run
beside them (after commits, as the tables' retention asks, and asked for), and each writer has one
commit rejected (a compaction of a file no snapshot holds). Replica A is stopped dead right
after one of its commit points (in the publish that follows it: the change and its event are recorded,
its writer not answered) and SIGKILLed there; later replica B is SIGKILLed at an arbitrary moment. Both
come back on their ports. Writers resend what got no answer to the other replica; the consumer follows
whichever replica answers, resuming from its last cursor.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.support import event_load_writer
from tests.support.databases import postgres_database
from tests.support.paimon_files import create_table
from tests.support.served import ServedCoordinator

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

WRITERS = 6
COMMITS = 15
ENV = {
    "COORDINATOR_LOCK_LEASE_SECONDS": "3",
    "COORDINATOR_LOCK_ACQUIRE_TIMEOUT_SECONDS": "60",
    "COORDINATOR_LOG_FORMAT": "text",
    "COORDINATOR_EVENTS_POLL_SECONDS": "0.05",
}
RETENTION = {"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "4"}
STOP_AFTER_COMMIT_POINT = ("coordinator.commit.publish:Publication.publish_group", 12)
"""Replica A stops dead at its 12th publish: the commit point before it has written the change and its
event, nothing has been answered."""


@pytest.fixture
def database() -> Iterator[str]:
    with postgres_database("coordinator_events") as url:
        yield url


class Consumer:
    """Follows GET /events from cursor 0, on whichever replica answers, until told to stop and the feed
    is drained."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.events: list[dict[str, Any]] = []
        self.switches = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def __enter__(self) -> Consumer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(120)

    def _run(self) -> None:
        after, turn = 0, 0
        with httpx.Client(timeout=30) as http:
            while True:
                stopping = self._stop.is_set()
                try:
                    answer = http.get(
                        f"{self.urls[turn % 2]}/events", params={"after": after, "wait": 1, "limit": 500}
                    )
                    answer.raise_for_status()
                except httpx.HTTPError:
                    turn += 1
                    self.switches += 1
                    time.sleep(0.1)
                    continue
                page = answer.json()
                self.events.extend(page["events"])
                after = page["nextCursor"]
                if stopping and not page["events"]:
                    return


def test_a_consumer_ends_with_every_acknowledged_change_once_in_snapshot_order(
    database: str, warehouse: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "stopped"
    a = ServedCoordinator(
        database, warehouse, tmp_path / "a.log", env=ENV, stop_at=(*STOP_AFTER_COMMIT_POINT, marker)
    )
    a.wait_healthy()  # migrates the empty database
    b = ServedCoordinator(database, warehouse, tmp_path / "b.log", env=ENV)
    b.wait_healthy()
    replicas = [a, b]
    urls = [a.url, b.url]
    stop_expiring = threading.Event()
    try:
        fields = {"dt": "STRING", "id": "BIGINT"}
        shared = create_table(b.http, "load", "shared", fields, partitionKeys=["dt"], options=RETENTION)
        own = [
            create_table(b.http, "load", f"w{w}", fields, partitionKeys=["dt"], options=RETENTION)
            for w in range(WRITERS)
        ]
        expired: list[int] = []

        def expire() -> None:
            with httpx.Client(timeout=30) as http:
                turn = 0
                while not stop_expiring.wait(0.3):
                    turn += 1
                    try:
                        table = own[turn % WRITERS].id
                        answer = http.post(f"{urls[turn % 2]}/tables/{table}/expire", json={})
                    except httpx.TransportError:
                        continue
                    expired.append(answer.status_code)

        expirer = threading.Thread(target=expire, daemon=True)
        with Consumer(urls) as consumer:
            writers = [
                event_load_writer.start(urls, w, COMMITS, [own[w].id, shared.id]) for w in range(WRITERS)
            ]
            expirer.start()

            deadline = time.monotonic() + 120
            while not marker.exists():
                assert time.monotonic() < deadline, "replica A never reached its 12th publish"
                time.sleep(0.05)
            a.process.kill()  # between the commit point and the answer
            a.stop()
            a = ServedCoordinator(database, warehouse, tmp_path / "a2.log", env=ENV, port=a.port)
            replicas[0] = a
            time.sleep(1.5)
            b.process.kill()  # anywhere
            b.stop()
            b = ServedCoordinator(database, warehouse, tmp_path / "b2.log", env=ENV, port=b.port)
            replicas[1] = b
            a.wait_healthy()
            b.wait_healthy()

            outputs = []
            for writer in writers:
                out, err = writer.communicate(timeout=300)
                assert writer.returncode == 0, err[-3000:]
                outputs.append(out)
            stop_expiring.set()
            expirer.join(60)
        seen = consumer.events
    finally:
        stop_expiring.set()
        for replica in replicas:
            replica.stop()

    lines = [json.loads(line) for out in outputs for line in out.splitlines()]
    answers = [line for line in lines if line[4] != "rejected"]
    refused = {(t, user, i) for t, user, i, _, kind, _ in lines if kind == "rejected"}
    acknowledged = {(t, user, i, tuple(snapshots), kind) for t, user, i, snapshots, kind, _ in answers}
    assert len(acknowledged) == len(answers) == WRITERS * (COMMITS + COMMITS // 3)
    assert len(refused) == WRITERS
    # The commit that replica A recorded but never answered was answered by B from its record.
    assert any(deduplicated for *_, deduplicated in answers)
    changes = [
        (e["tableId"], e["commitUser"], e["commitIdentifier"], tuple(e["snapshotIds"]), e["kind"])
        for e in seen
        if e["kind"] in ("commit", "transaction")
    ]
    # Every acknowledged change once, and nothing else (no event of a change that did not stand).
    assert len(changes) == len(set(changes))
    assert set(changes) == acknowledged
    assert not {(t, user, i) for t, user, i, _, _ in changes} & refused

    cursors = [e["cursor"] for e in seen]
    assert cursors == sorted(set(cursors))
    # Per table, in cursor order, the snapshots are the table's snapshots in order.
    by_table: dict[str, list[int]] = defaultdict(list)
    for table, _user, _identifier, made, _kind in changes:
        by_table[table].extend(made)
    for table, ids in by_table.items():
        assert ids == list(range(1, len(ids) + 1)), table

    # Expirations ran beside the commits, each with its event, of snapshots that were committed.
    expirations = [e for e in seen if e["kind"] == "expire"]
    assert expirations
    assert all(set(e["snapshotIds"]) <= set(by_table[e["tableId"]]) for e in expirations)
    # What the consumer assembled across replicas and kills is the outbox itself, and it did change
    # replicas on the way.
    engine = create_engine(database)
    try:
        with engine.connect() as conn:
            assert [r.id for r in conn.execute(text("SELECT id FROM events ORDER BY id"))] == cursors
    finally:
        engine.dispose()
    assert consumer.switches >= 1
