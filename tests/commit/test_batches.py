"""Batches: the groups of many tables ready at the same moment are committed together (commit/batch.py),
while each table keeps its own order, its own conflict check and its own answer."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from coordinator.app import create_app
from coordinator.commit.pipeline import Committer
from coordinator.errors import CommitConflict, IdentifierReused
from coordinator.services import Services
from coordinator.settings import Settings
from coordinator_client import CoordinatorClient
from coordinator_client.models import CommitRequest, CommitResponse
from tests.support.commits import append_commit, history
from tests.support.databases import postgres_database
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows
from tests.support.pause import PausedCall
from tests.support.served import ServedCoordinator

FIELDS = {"id": "BIGINT", "w": "INT"}


def batch_sizes(services: Services) -> dict[float, float]:
    """The batch histogram's cumulative counts by upper bound."""
    [metric] = services.metrics.batch_tables.collect()
    return {float(s.labels["le"]): s.value for s in metric.samples if s.name.endswith("_bucket")}


def wait_until(done: Callable[[], bool], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


@pytest.fixture
def one_batch_at_once(settings: Settings) -> Iterator[TestClient]:
    """The app in-process, committing one batch at a time: the next batch waits for the one held."""
    with TestClient(create_app(settings.model_copy(update={"commit_batches_at_once": 1}))) as client:
        yield client


def test_one_table_s_conflict_in_a_batch_answers_only_its_commit(one_batch_at_once: TestClient) -> None:
    api = one_batch_at_once
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    db = f"b{uuid.uuid4().hex[:6]}"
    first, clean, conflicting, reused = (create_table(api, db, name, FIELDS) for name in "abcd")
    committer = services.committer

    def commit(table: PaimonTable, row: dict[str, Any], **request: Any) -> CommitResponse:
        return committer.commit(
            table.id, CommitRequest.model_validate(append_commit(table, [row], **request))
        )

    commit(reused, {"id": 1, "w": 0}, user="u", identifier=1)
    before = batch_sizes(services)

    # A batch of table a is held at its start; meanwhile three other tables' leaders wait for the next
    # batch: a valid commit, one whose base snapshot is not the head (a conflict), and one reusing an
    # identifier with other changes (refused).
    held = PausedCall(lambda: commit(first, {"id": 1, "w": 1}), at=Committer._commit_batch).start()
    answers: dict[str, CommitResponse | BaseException] = {}

    def send(name: str, call: Callable[[], CommitResponse]) -> None:
        try:
            answers[name] = call()
        except BaseException as error:
            answers[name] = error

    senders = [
        threading.Thread(target=send, args=(name, call))
        for name, call in (
            ("clean", lambda: commit(clean, {"id": 2, "w": 2})),
            ("conflicting", lambda: commit(conflicting, {"id": 3, "w": 3}, baseSnapshotId=7)),
            ("reused", lambda: commit(reused, {"id": 4, "w": 4}, user="u", identifier=1)),
        )
    ]
    for sender in senders:
        sender.start()
    wait_until(lambda: committer._steps.batches.waiting == 3, "three tables waiting for a batch")
    assert held.resume().snapshots[0].id == 1
    for sender in senders:
        sender.join(60)

    assert isinstance(answers["clean"], CommitResponse), answers["clean"]
    assert [s.id for s in answers["clean"].snapshots] == [1]
    conflict = answers["conflicting"]
    assert isinstance(conflict, CommitConflict), conflict
    assert conflict.conflict.type == "BASE_SNAPSHOT_MOVED"
    refused = answers["reused"]
    assert isinstance(refused, IdentifierReused), refused
    # The three were one batch, after table a's batch of one.
    after = batch_sizes(services)
    assert after[4.0] - after[2.0] - (before[4.0] - before[2.0]) == 1, (before, after)
    assert [c["outcome"] for c in history(api, clean.id)] == ["committed"]
    assert [c["outcome"] for c in history(api, conflicting.id)] == ["rejected"]
    assert [c["identifier"] for c in history(api, reused.id)] == [1]


WRITERS = 12
TABLES = 6
COMMITS = 12


@pytest.mark.slow
@pytest.mark.parametrize("database", ["postgres", "sqlite"])
def test_batches_keep_each_table_s_order_and_exactly_once_under_replica_kills(
    database: str, tmp_path: Path
) -> None:
    """Two replicas, twelve writers over six tables (two writers a table), each replica SIGKILLed once and
    started again mid-load: every commit lands once, each writer's commits in its order, and batches of
    more than one table formed."""
    warehouse = tmp_path / "warehouse"
    if database == "postgres":
        with postgres_database("coordinator_batches") as url:
            _load_through_killed_replicas(url, warehouse, tmp_path)
    else:
        _load_through_killed_replicas(f"sqlite:///{tmp_path / 'coordinator.db'}", warehouse, tmp_path)


def _load_through_killed_replicas(url: str, warehouse: Path, tmp_path: Path) -> None:
    # One batch at a time per replica, so that twelve writers over six tables make batches of several.
    env = {"COORDINATOR_COMMIT_BATCHES_AT_ONCE": "1"}
    replicas = [ServedCoordinator(url, warehouse, tmp_path / f"replica-{i}.log", env=env) for i in range(2)]
    for replica in replicas:
        replica.wait_healthy()
    try:
        tables = [create_table(replicas[0].http, "load", f"t{i}", FIELDS) for i in range(TABLES)]
        urls = [r.url for r in replicas]
        acknowledged: list[tuple[int, int]] = []
        errors: list[BaseException] = []
        guard = threading.Lock()

        def writer(n: int) -> None:
            table = tables[n % TABLES]
            try:
                for k in range(1, COMMITS + 1):
                    body = append_commit(
                        table, [{"id": n * 1000 + k, "w": n}], user=f"writer-{n}", identifier=k
                    )
                    _commit_until_answered(urls, n + k, table, body)
                    with guard:
                        acknowledged.append((n, k))
            except BaseException as error:  # surfaced below: a thread's failure must fail the test
                errors.append(error)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
        for thread in threads:
            thread.start()
        for i in range(2):  # each replica killed mid-load and started again
            enough = (i + 1) * WRITERS * COMMITS // 3
            wait_until(lambda: len(acknowledged) >= enough, "the load going on", 120)  # noqa: B023
            replicas[i].process.kill()
            replicas[i].process.wait()
            replicas[i].stop()
            replicas[i] = ServedCoordinator(url, warehouse, tmp_path / f"replica-{i}-again.log", env=env)
            replicas[i].wait_healthy()
            urls[i] = replicas[i].url
        for thread in threads:
            thread.join(300)
        assert errors == []
        assert sorted(acknowledged) == [(n, k) for n in range(WRITERS) for k in range(1, COMMITS + 1)]

        recorded_at: dict[float, set[str]] = {}
        with httpx.Client(base_url=replicas[0].url, timeout=60) as http:
            for i, table in enumerate(tables):
                writers = [n for n in range(WRITERS) if n % TABLES == i]
                rows = pypaimon_rows(warehouse, table.id)
                assert sorted(r["id"] for r in rows) == sorted(
                    n * 1000 + k for n in writers for k in range(1, COMMITS + 1)
                ), table.id
                committed = [
                    c for c in history(http, table.id, oldest_first=True) if c["outcome"] == "committed"
                ]
                for n in writers:  # each writer's commits in its order, each once
                    mine = [c for c in committed if c["commitUser"] == f"writer-{n}"]
                    assert [c["identifier"] for c in mine] == list(range(1, COMMITS + 1)), (table.id, n)
                    ids = [c["snapshots"][0]["id"] for c in mine]
                    assert ids == sorted(ids), (table.id, n)
                for c in committed:
                    recorded_at.setdefault(c["createdAt"], set()).add(table.id)
        # The commits of one batch are recorded at one commit point, at one time.
        assert max(len(t) for t in recorded_at.values()) > 1, "no batch of more than one table"
    finally:
        for replica in replicas:
            replica.stop()


def _commit_until_answered(urls: list[str], turn: int, table: PaimonTable, body: dict[str, Any]) -> None:
    """Send the commit until a replica answers it, as a streaming job's committer does after a failure:
    the same commitUser, identifier and changes, so a commit that landed before is answered as a resend."""
    deadline = time.monotonic() + 120
    while True:
        url = urls[turn % len(urls)]
        try:
            with CoordinatorClient(url, timeout=60) as client:
                client.commit(table.id, body)
            return
        except Exception:
            assert time.monotonic() < deadline, (
                f"commit {body['commitUser']}/{body['identifier']} never answered"
            )
            turn += 1
            time.sleep(0.2)
