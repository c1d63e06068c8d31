"""Six writer processes commit transactions over random pairs of four tables, in random order, beside
single-table commits and an expiration loop, against two real service processes on PostgreSQL.

No deadlock (every writer finishes), no lock seen held past its expiry, and every acknowledged change on
each of its tables exactly once, none on only part of them."""

from __future__ import annotations

import multiprocessing
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from coordinator_client import CoordinatorClient
from tests.support.commits import append_commit
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows
from tests.support.served import ServedCoordinator, emptied_replicas

pytestmark = pytest.mark.slow

WRITERS = 6
TRANSACTIONS = 30
SINGLES = 20
RETENTION = {
    "snapshot.num-retained.min": "2",
    "snapshot.num-retained.max": "4",
    "snapshot.time-retained": "1 ms",
}


@pytest.fixture
def services(pg_url: str, warehouse: Path, tmp_path: Path) -> Iterator[list[ServedCoordinator]]:
    with emptied_replicas(
        pg_url, warehouse, tmp_path, 2, COORDINATOR_LOCK_ACQUIRE_TIMEOUT_SECONDS="120"
    ) as started:
        yield started


def transaction_writer(n: int, urls: list[str], tables: list[dict[str, Any]]) -> list[tuple[int, list[str]]]:
    """TRANSACTIONS transactions, each adding row n*1000+k to a random pair of tables in random order;
    returns what was acknowledged. Runs in a process of its own."""
    rng = random.Random(n)
    known = [PaimonTable(t) for t in tables]
    acknowledged = []
    with CoordinatorClient(urls[n % len(urls)], timeout=300) as client:
        for k in range(TRANSACTIONS):
            row = {"id": n * 1000 + k}
            pair = rng.sample(known, 2)
            body = {
                "commitUser": f"tx-{n}",
                "identifier": k,
                "tables": [{"table": t.id, "messages": [t.append_message([row])]} for t in pair],
            }
            answer = client.commit_transaction(body)  # retries 503 and LOCK_LOST; resolves a lost answer
            assert [len(t.snapshots) for t in answer.tables] == [1, 1]
            acknowledged.append((row["id"], [t.id for t in pair]))
    return acknowledged


def test_six_processes_of_transactions_beside_single_commits_and_expiration(
    services: list[ServedCoordinator], warehouse: Path
) -> None:
    urls = [s.url for s in services]
    tables = [
        create_table(services[0].http, "stress", f"t{i}", {"id": "BIGINT"}, options=RETENTION)
        for i in range(4)
    ]
    expected: dict[str, list[int]] = {t.id: [] for t in tables}
    stop = threading.Event()
    problems: list[str] = []

    def singles() -> None:
        with CoordinatorClient(urls[1], timeout=300) as client:
            for k in range(SINGLES):
                table = tables[k % len(tables)]
                row = {"id": 900_000 + k}
                body = append_commit(table, [row], user="single", identifier=k)
                client.commit(table.id, body)
                expected[table.id].append(row["id"])

    def expire() -> None:
        while not stop.is_set():
            for table in tables:
                answer = httpx.post(f"{urls[0]}/tables/{table.id}/expire", timeout=300)
                if answer.status_code not in (200, 503):
                    problems.append(f"expire {table.id}: {answer.status_code} {answer.text}")
            time.sleep(0.05)

    def watch_locks() -> None:
        while not stop.is_set():
            now = time.time()
            for lock in httpx.get(f"{urls[0]}/locks", timeout=60).json()["locks"]:
                # A lease is renewed well before it runs out; one past it (beyond clock skew) is a holder
                # that kept working without its lock.
                if lock["expiresAt"] < now - 1:
                    problems.append(f"held past its expiry: {lock}")
            time.sleep(0.05)

    helpers = [threading.Thread(target=f) for f in (expire, watch_locks)]
    for helper in helpers:
        helper.start()
    single_writer = threading.Thread(target=singles)
    single_writer.start()
    context = multiprocessing.get_context("spawn")
    try:
        with context.Pool(WRITERS) as pool:
            described = [services[0].http.get(f"/tables/{t.id}").json() for t in tables]
            args = [(n, urls, described) for n in range(1, WRITERS + 1)]
            results = pool.starmap_async(transaction_writer, args).get(timeout=900)
        single_writer.join(timeout=600)
        assert not single_writer.is_alive(), "the single commits are stuck: a deadlock"
    finally:
        stop.set()
        for helper in helpers:
            helper.join(timeout=60)
    assert problems == []
    for acknowledged in results:
        assert len(acknowledged) == TRANSACTIONS
        for row, pair in acknowledged:
            for table_id in pair:
                expected[table_id].append(row)
    for table in tables:
        ids = sorted(r["id"] for r in pypaimon_rows(warehouse, table.id))
        assert ids == sorted(expected[table.id]), table.id  # each once; none of a transaction missing
    assert sum(len(v) for v in expected.values()) == WRITERS * TRANSACTIONS * 2 + SINGLES
    # Expiration ran: old snapshots are gone, and no lock is left held.
    assert any(httpx.get(f"{urls[0]}/tables/{t.id}/snapshots/1").status_code == 404 for t in tables)
    assert httpx.get(f"{urls[0]}/locks").json()["locks"] == []
