"""Backpressure (commit/admission.py): when the commits waiting in the service would take longer to answer
than the limit, a new commit is refused with 429 and Retry-After before it queues. Nothing of a refused
commit is written or recorded, and every admitted commit is decided.

On a real uvicorn, commits sent over HTTP from real threads: a table jammed behind a lock held outside
(exactly which commits are admitted is known), then floods of concurrent commits to one table and to many
(a small limit, so some are refused whatever the machine's speed). pypaimon reads every table back.
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from coordinator.commit.admission import process_wait, retry_after, table_wait
from coordinator.settings import Settings
from coordinator_client import CoordinatorClient
from tests.support.backpressure import Jam, refused
from tests.support.commits import append_commit, history, post_commit, transaction_body
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows, sorted_rows
from tests.support.served import LiveServer
from tests.support.waiting import wait_for

FIELDS = {"id": "BIGINT", "v": "STRING"}
JAMMED_LIMIT = 2.0
"""Long enough that every commit the test jams is admitted before their turn outlasts it."""
FLOOD_LIMIT = 0.02
"""Short enough that a flood of concurrent commits outlasts it on any machine: the first commit is
admitted (nothing is ahead of it), and 63 others ahead of a commit take longer than this even when
batches make each of them cheap."""
SENDERS = 64


def _settings(settings: Settings, limit: float) -> Settings:
    """A lease and acquire timeout that outlast a jam: only admission refuses here."""
    return settings.model_copy(
        update={
            "commit_queue_max_wait_seconds": limit,
            "lock_lease_seconds": 30,
            "lock_acquire_timeout_seconds": 120,
        }
    )


def _row(n: int) -> dict[str, Any]:
    return {"id": n, "v": f"r{n}"}


def _body(table: PaimonTable, n: int) -> dict[str, Any]:
    """Commit user `writer-<n>` adding one file with the row of id n."""
    return append_commit(table, [_row(n)], user=f"writer-{n}", identifier=1)


def _assert_refused(answer: httpx.Response) -> None:
    assert answer.status_code == 429, answer.text
    assert int(answer.headers["Retry-After"]) >= 1
    assert answer.json()["code"] == "COMMIT_QUEUE_FULL"


def _users(http: httpx.Client, table: PaimonTable) -> Counter[str]:
    return Counter(record["commitUser"] for record in history(http, table.id))


@pytest.mark.parametrize(
    ("ahead", "group_seconds", "wait"),
    [(0, 5.0, 0.0), (1, None, 0.0), (1, 0.5, 0.5), (32, 0.5, 0.5), (33, 0.5, 1.0), (100, 0.2, 0.8)],
)
def test_a_table_waits_for_the_groups_ahead(ahead: int, group_seconds: float | None, wait: float) -> None:
    """Groups of up to 32, one after another; never the newcomer's own: an empty queue admits all."""
    assert table_wait(ahead, group_seconds, 32) == pytest.approx(wait)


@pytest.mark.parametrize(
    ("ahead", "per_commit", "wait"), [(0, 9.0, 0.0), (10, None, 0.0), (10, 0.01, 0.1), (500, 0.1, 50.0)]
)
def test_the_process_waits_for_every_commit_ahead(ahead: int, per_commit: float | None, wait: float) -> None:
    assert process_wait(ahead, per_commit) == pytest.approx(wait)


@pytest.mark.parametrize(
    ("wait", "limit", "seconds"), [(30.1, 30, 1), (31.5, 30, 2), (500, 30, 30), (0.3, 0.25, 1)]
)
def test_retry_after_is_when_the_queue_fits_the_limit_again(wait: float, limit: float, seconds: int) -> None:
    assert retry_after(wait, limit) == seconds


@pytest.mark.timeout(180)
def test_commits_to_a_jammed_table_get_429_and_leave_no_trace(
    settings: Settings, warehouse_location: str
) -> None:
    with (
        LiveServer(_settings(settings, JAMMED_LIMIT)) as server,
        httpx.Client(base_url=server.url, timeout=120) as http,
    ):
        hot = create_table(http, "db", "hot", FIELDS)
        cold = create_table(http, "db", "cold", FIELDS)
        admitted = [_body(hot, n) for n in range(4)]
        turned_away = [_body(hot, n) for n in range(100, 110)]
        with Jam(server, http, hot, admitted) as jam:
            with ThreadPoolExecutor(len(turned_away)) as pool:
                answers = list(pool.map(lambda body: post_commit(http, hot, body), turned_away))
            # Another table's queue is empty: its commit goes through while the hot one is jammed.
            assert post_commit(http, cold, _body(cold, 7)).status_code == 201
            # A transaction waits for the hot table's lock too.
            both = [(hot, [hot.append_message([_row(200)])]), (cold, [cold.append_message([_row(201)])])]
            transaction = http.post("/transactions", json=transaction_body(both, user="tx"))

        for answer in [*answers, transaction]:
            _assert_refused(answer)
        assert "table db.hot" in answers[0].json()["message"]
        assert [answer.status_code for answer in jam.responses()] == [201] * 4
        counted = refused(http)
        assert counted["table"] >= len(turned_away)  # nothing had been answered: the table's rule
        assert counted["table"] + counted["process"] == len(turned_away) + 1
        assert _users(http, hot) == Counter(f"writer-{n}" for n in range(4))
        assert _users(http, cold) == Counter(["writer-7"])
        outcome = http.get(f"/tables/{hot.id}/commits/writer-100/1").json()
        assert outcome["status"] == "unknown"  # never received, as far as the service's records go
    assert pypaimon_rows(warehouse_location, hot.id) == sorted_rows(_row(n) for n in range(4))
    assert pypaimon_rows(warehouse_location, cold.id) == [_row(7)]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("tables", [1, 8])
def test_a_flood_gets_some_429s_and_every_201_lands_exactly_once(
    settings: Settings, warehouse_location: str, tables: int
) -> None:
    limits = httpx.Limits(max_connections=SENDERS + 8)
    with (
        LiveServer(_settings(settings, FLOOD_LIMIT)) as server,
        httpx.Client(base_url=server.url, timeout=120, limits=limits) as http,
    ):
        targets = [create_table(http, "db", f"t{i}", FIELDS) for i in range(tables)]
        # One commit each first, so the service knows how long a commit and a group take here.
        for i, table in enumerate(targets):
            assert post_commit(http, table, _body(table, 10_000 + i)).status_code == 201
        flood = [(targets[n % tables], _body(targets[n % tables], n)) for n in range(SENDERS)]
        start = threading.Barrier(SENDERS)

        def send(item: tuple[PaimonTable, dict[str, Any]]) -> httpx.Response:
            start.wait()
            return post_commit(http, *item)

        with ThreadPoolExecutor(SENDERS) as pool:
            answers = list(pool.map(send, flood))
        statuses = Counter(answer.status_code for answer in answers)
        assert set(statuses) == {201, 429}, statuses
        for answer in answers:
            if answer.status_code == 429:
                _assert_refused(answer)
        assert sum(refused(http).values()) == statuses[429]
        for i, table in enumerate(targets):
            landed = [n for n in range(i, SENDERS, tables) if answers[n].status_code == 201]
            expected = Counter([f"writer-{10_000 + i}", *(f"writer-{n}" for n in landed)])
            assert _users(http, table) == expected  # every 201 once, no 429
            rows = [_row(10_000 + i), *(_row(n) for n in landed)]
            assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(rows)


@pytest.mark.timeout(180)
def test_the_client_resends_a_429_after_retry_after_and_commits(
    settings: Settings, warehouse_location: str
) -> None:
    with (
        LiveServer(_settings(settings, JAMMED_LIMIT)) as server,
        httpx.Client(base_url=server.url, timeout=120) as http,
        CoordinatorClient(server.url, timeout=120) as client,
        ThreadPoolExecutor(1) as pool,
    ):
        hot = create_table(http, "db", "hot", FIELDS)
        with Jam(server, http, hot, [_body(hot, n) for n in range(2)]):
            sent = pool.submit(client.commit, hot.id, _body(hot, 50))
            wait_for(lambda: refused(http).get("table"), "the client's commit refused")
        # The jam is over: the resend after Retry-After is admitted and committed, once.
        response = sent.result(timeout=60)
        assert [s.id for s in response.snapshots] == [3]
        assert not response.deduplicated
        assert _users(http, hot) == Counter(["writer-0", "writer-1", "writer-50"])
    assert pypaimon_rows(warehouse_location, hot.id) == sorted_rows(_row(n) for n in (0, 1, 50))
