"""The JetStream publisher under load, across replicas that get killed and a broker that goes away: the
stream ends with exactly the acknowledged changes, each once (no duplicate message id), per table in
snapshot order, in the outbox's order.

Two `coordinator serve` replicas on one PostgreSQL database, a real nats-server, six writer processes as
in the feed's load test (tests/events/test_feed_under_load.py). Replica A starts first and so publishes.
In the first test it is stopped dead at its publisher's 40th send (the event recorded at its commit
point, not yet sent) and SIGKILLed there; B takes the lease over and resends from the durable cursor
(what A sent after its last cursor move comes again, and JetStream drops it by message id). Later B is
SIGKILLed at an arbitrary moment and A, back, takes over. In the second, nats-server is stopped for 10 s
mid-load: commits go on, the publisher's lag grows, and drains to 0 once the server is back.
"""

from __future__ import annotations

import json
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
from tests.support.nats import NatsServer, stream_messages
from tests.support.paimon_files import PaimonTable, create_table
from tests.support.served import ServedCoordinator
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

WRITERS = 6
COMMITS = 15
OUTAGE_COMMITS = 40
"""Enough that the writers are still at it when the broker comes back 10 s later."""
STREAM = "LOAD_EVENTS"
STOP_AT_SEND = ("coordinator.usecases.publishing.relay:Relay._send", 40)
"""Replica A's publisher thread stops dead as it is about to send its 40th event."""


@pytest.fixture
def database() -> Iterator[str]:
    with postgres_database("coordinator_publishing") as url:
        yield url


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    with NatsServer(tmp_path / "jetstream", tmp_path / "nats.log") as server:
        yield server


def environment(nats_url: str) -> dict[str, str]:
    return {
        "COORDINATOR_LOCK_LEASE_SECONDS": "3",
        "COORDINATOR_LOCK_ACQUIRE_TIMEOUT_SECONDS": "60",
        "COORDINATOR_LOG_FORMAT": "text",
        "COORDINATOR_EVENTS_POLL_SECONDS": "0.05",
        "COORDINATOR_EVENTS_NATS_URL": nats_url,
        "COORDINATOR_EVENTS_NATS_STREAM": STREAM,
        "COORDINATOR_EVENTS_PUBLISHER_LEASE_SECONDS": "2",
        "COORDINATOR_EVENTS_PUBLISHER_BACKOFF_SECONDS": "0.1",
        "COORDINATOR_EVENTS_PUBLISHER_MAX_BACKOFF_SECONDS": "1",
    }


def tables(replica: ServedCoordinator) -> tuple[PaimonTable, list[PaimonTable]]:
    fields = {"dt": "STRING", "id": "BIGINT"}
    shared = create_table(replica.http, "load", "shared", fields, partitionKeys=["dt"])
    own = [create_table(replica.http, "load", f"w{w}", fields, partitionKeys=["dt"]) for w in range(WRITERS)]
    return shared, own


def nats_publisher(url: str) -> dict[str, Any] | None:
    try:
        answer = httpx.get(f"{url}/ops/publishers", timeout=5)
    except httpx.TransportError:
        return None
    (state,) = answer.json()["publishers"]
    return dict(state)


def acknowledged(writers: list[Any], commits: int = COMMITS) -> set[tuple[Any, ...]]:
    """Every change the writers got acknowledged: (table, user, identifier, snapshots, kind)."""
    lines: list[list[Any]] = []
    for writer in writers:
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err[-3000:]
        lines.extend(json.loads(line) for line in out.splitlines())
    answers = [line for line in lines if line[4] != "rejected"]
    changes = {(t, user, i, tuple(snapshots), kind) for t, user, i, snapshots, kind, _ in answers}
    assert len(changes) == len(answers) == WRITERS * (commits + commits // 3)
    return changes


def check_stream(nats_url: str, database: str, expected: set[tuple[Any, ...]]) -> None:
    """The stream holds each outbox event once, in outbox order, and its changes are the acknowledged
    ones, per table in snapshot order."""
    held = stream_messages(nats_url, STREAM)
    ids = [int(msg_id) for _, msg_id, _ in held]
    assert len(ids) == len(set(ids)), "a message id twice in the stream"
    engine = create_engine(database)
    try:
        with engine.connect() as conn:
            outbox = [r.id for r in conn.execute(text("SELECT id FROM events ORDER BY id"))]
    finally:
        engine.dispose()
    assert ids == outbox
    events = [event for _, _, event in held]
    assert all(int(msg_id) == event["cursor"] for (_, msg_id, _), event in zip(held, events, strict=True))
    changes = [
        (e["tableId"], e["commitUser"], e["commitIdentifier"], tuple(e["snapshotIds"]), e["kind"])
        for e in events
        if e["kind"] in ("commit", "transaction")
    ]
    assert len(changes) == len(set(changes))
    assert set(changes) == expected
    by_table: dict[str, list[int]] = defaultdict(list)
    for table, _user, _identifier, snapshots, _kind in changes:
        by_table[table].extend(snapshots)
    for table, ids in by_table.items():
        assert ids == list(range(1, len(ids) + 1)), table
    for subject, _, event in held:
        assert subject == f"coordinator.events.{event['database']}.{event['table']}"


def test_replicas_killed_between_commit_point_and_send_lose_and_duplicate_nothing(
    database: str, warehouse: Path, tmp_path: Path, nats_server: NatsServer
) -> None:
    env = environment(nats_server.url)
    marker = tmp_path / "stopped"
    a = ServedCoordinator(database, warehouse, tmp_path / "a.log", env=env, stop_at=(*STOP_AT_SEND, marker))
    a.wait_healthy()  # migrates, and takes the publisher's lease
    b = ServedCoordinator(database, warehouse, tmp_path / "b.log", env=env)
    replicas = [a, b]
    try:
        b.wait_healthy()
        urls = [a.url, b.url]
        shared, own = tables(b)
        writers = [event_load_writer.start(urls, w, COMMITS, [own[w].id, shared.id]) for w in range(WRITERS)]

        wait_for(marker.exists, "replica A's publisher at its 40th send", 120)
        a.process.kill()  # its event committed, its send not made
        a.stop()
        # B takes the lease over once A's ran out, and sends on from the cursor.
        wait_for(lambda: (s := nats_publisher(b.url)) and s["cursor"] > 40, "B publishing", 60)
        a = ServedCoordinator(database, warehouse, tmp_path / "a2.log", env=env, port=a.port)
        replicas[0] = a
        b.process.kill()  # anywhere
        b.stop()
        b = ServedCoordinator(database, warehouse, tmp_path / "b2.log", env=env, port=b.port)
        replicas[1] = b
        a.wait_healthy()
        b.wait_healthy()

        expected = acknowledged(writers)
        wait_for(lambda: (s := nats_publisher(a.url)) and s["lagEvents"] == 0, "the publisher to drain", 120)
        check_stream(nats_server.url, database, expected)
    finally:
        for replica in replicas:
            replica.stop()


def test_nats_down_ten_seconds_mid_load_commits_go_on_and_the_lag_drains(
    database: str, warehouse: Path, tmp_path: Path, nats_server: NatsServer
) -> None:
    env = environment(nats_server.url)
    a = ServedCoordinator(database, warehouse, tmp_path / "a.log", env=env)
    a.wait_healthy()
    b = ServedCoordinator(database, warehouse, tmp_path / "b.log", env=env)
    try:
        b.wait_healthy()
        urls = [a.url, b.url]
        shared, own = tables(b)
        writers = [
            event_load_writer.start(urls, w, OUTAGE_COMMITS, [own[w].id, shared.id]) for w in range(WRITERS)
        ]
        wait_for(lambda: (s := nats_publisher(a.url)) and s["delivered"] >= 20, "the publisher going")

        nats_server.stop()
        down_at = time.monotonic()
        commits_before = committed_events(database)
        lags: list[int] = []
        state: dict[str, Any] = {}
        while time.monotonic() - down_at < 10:
            seen = nats_publisher(b.url)
            assert seen is not None
            state = seen
            lags.append(state["lagEvents"])
            time.sleep(0.5)
        # The commits went on without the broker, and the publisher fell behind them.
        assert committed_events(database) > commits_before
        assert max(lags) > lags[0] >= 0
        assert state["lastError"]
        assert state["lagSeconds"] is not None
        metrics = httpx.get(f"{a.url}/metrics").text
        assert 'coordinator_publisher_failures_total{publisher="nats"}' in metrics
        nats_server.start()

        expected = acknowledged(writers, OUTAGE_COMMITS)
        drained = wait_for(
            lambda: (s := nats_publisher(b.url)) and s["lagEvents"] == 0 and s, "the lag to drain", 120
        )
        assert drained is not None
        assert drained["failures"] >= 1
        assert drained["lastError"] is None
        check_stream(nats_server.url, database, expected)
    finally:
        a.stop()
        b.stop()


def committed_events(database: str) -> int:
    engine = create_engine(database)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM events")).scalar_one())
    finally:
        engine.dispose()
