"""`coordinator serve --workers N`: N real worker processes of one real `coordinator serve` on one port,
on a PostgreSQL database of the test's own; streaming writers commit to 20 tables through the one port.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.databases import postgres_database
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows
from tests.support.served import ServedCoordinator
from tests.support.workers import (
    StreamingLoad,
    alive,
    exposed,
    metrics_dir,
    per_worker,
    wait_for,
    worker_pids,
)

WORKERS = 3
TABLES = 20
SENDERS = 12
ENV = {
    "COORDINATOR_WORKERS": str(WORKERS),
    "COORDINATOR_LOCK_ACQUIRE_TIMEOUT_SECONDS": "60",
    # A killed worker's locks are taken over soon.
    "COORDINATOR_LOCK_LEASE_SECONDS": "3",
    "COORDINATOR_LOG_FORMAT": "text",
}
SERVING = re.compile(r"worker (\d+) \(pid (\d+)\) serving on \S+, advertising (\S+)")


@pytest.fixture
def database() -> Iterator[str]:
    with postgres_database("coordinator_workers") as url:
        yield url


@pytest.fixture
def coordinator(database: str, warehouse: Path, tmp_path: Path) -> Iterator[ServedCoordinator]:
    """`coordinator serve` with three workers (advertising, as the bench's services do), all serving."""
    served = ServedCoordinator(database, warehouse, tmp_path / "coordinator.log", advertise=True, env=ENV)
    try:
        served.wait_healthy()
        wait_for(lambda: len(serving(served)) == WORKERS, 60, "every worker serving")
        wait_for(lambda: len(worker_pids(served.process.pid)) == WORKERS, 10, "three worker processes")
        yield served
    finally:
        served.stop()


def serving(served: ServedCoordinator) -> dict[int, str]:
    """pid -> advertised URL of every worker that logged it serves (and has started its app)."""
    text = served.log.read_text()
    started = text.count("Application startup complete")
    found = {int(pid): url for _, pid, url in SERVING.findall(text)}
    return found if started >= len(found) else {}


def tables(served: ServedCoordinator) -> list[PaimonTable]:
    return [create_table(served.http, "streams", f"t{i:02d}", {"id": "BIGINT"}) for i in range(TABLES)]


def assert_each_commit_once(load: StreamingLoad, warehouse: Path) -> None:
    assert load.errors == []
    assert len(load.acknowledged) == load.senders * load.commits
    for table_id, ids in load.expected().items():
        assert sorted(r["id"] for r in pypaimon_rows(warehouse, table_id)) == ids, table_id


@pytest.mark.postgres
@pytest.mark.slow
def test_three_workers_share_the_commits_of_one_port_and_each_lands_once(
    coordinator: ServedCoordinator, warehouse: Path
) -> None:
    load = StreamingLoad(coordinator.url, tables(coordinator), SENDERS, commits=15)
    load.run()
    assert_each_commit_once(load, warehouse)

    workers = worker_pids(coordinator.process.pid)
    committed = per_worker(metrics_dir(min(workers)), "coordinator_commits_total", outcome="committed")
    assert set(committed) == workers
    assert len([pid for pid, n in committed.items() if n > 0]) > 1, committed
    assert sum(committed.values()) == SENDERS * 15
    # Every worker's siblings reach it at its own private port, not the public one.
    urls = set(serving(coordinator).values())
    assert len(urls) == WORKERS
    assert coordinator.url not in urls


@pytest.mark.postgres
@pytest.mark.slow
def test_metrics_sum_the_counters_of_every_worker(coordinator: ServedCoordinator) -> None:
    load = StreamingLoad(coordinator.url, tables(coordinator), senders=6, commits=5)
    load.run()
    assert load.errors == []
    folder = metrics_dir(min(worker_pids(coordinator.process.pid)))

    committed = per_worker(folder, "coordinator_commits_total", outcome="committed")
    assert len([n for n in committed.values() if n > 0]) > 1, committed
    # Answered by whichever worker the connection lands on: each answers the whole coordinator's sum.
    for _ in range(6):
        assert exposed(coordinator.url, "coordinator_commits_total", outcome="committed") == 30

    before = per_worker(folder, "coordinator_db_round_trips_total")
    shown = exposed(coordinator.url, "coordinator_db_round_trips_total")
    after = per_worker(folder, "coordinator_db_round_trips_total")
    assert len([n for n in before.values() if n > 0]) > 1, before
    assert sum(before.values()) <= shown <= sum(after.values())
    assert shown > max(after.values())  # more than any one worker's own count


@pytest.mark.postgres
@pytest.mark.slow
def test_a_killed_worker_is_restarted_and_no_commit_is_lost_or_doubled(
    coordinator: ServedCoordinator, warehouse: Path
) -> None:
    parent = coordinator.process.pid
    first = worker_pids(parent)
    load = StreamingLoad(coordinator.url, tables(coordinator), SENDERS, commits=15)
    threads = load.start()
    wait_for(lambda: len(load.acknowledged) >= 40 or load.errors, 120, "40 commits acknowledged")
    victim = min(first)
    os.kill(victim, signal.SIGKILL)
    wait_for(lambda: not alive(victim), 10, "the killed worker gone")
    wait_for(lambda: len(worker_pids(parent)) == WORKERS, 30, "a new worker in its place")
    for thread in threads:
        thread.join()

    restarted = worker_pids(parent)
    assert victim not in restarted
    assert len(restarted - first) == 1
    assert_each_commit_once(load, warehouse)
    assert "restarting it" in coordinator.log.read_text()


@pytest.mark.postgres
@pytest.mark.slow
def test_sigterm_to_the_supervisor_stops_every_worker_and_it_exits_0(coordinator: ServedCoordinator) -> None:
    workers = worker_pids(coordinator.process.pid)
    assert len(workers) == WORKERS
    coordinator.process.send_signal(signal.SIGTERM)
    assert coordinator.process.wait(timeout=40) == 0
    assert not [pid for pid in workers if alive(pid)]
    assert "all workers stopped" in coordinator.log.read_text()


@pytest.mark.postgres
@pytest.mark.slow
def test_workers_die_with_a_killed_supervisor(coordinator: ServedCoordinator) -> None:
    workers = worker_pids(coordinator.process.pid)
    assert len(workers) == WORKERS
    coordinator.process.kill()
    coordinator.process.wait(timeout=10)
    wait_for(lambda: not [pid for pid in workers if alive(pid)], 10, "every worker gone")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_more_than_one_worker_on_sqlite_is_refused(database_url: str, warehouse: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coordinator.cli", "serve", "--workers", "2", "--port", "1"],
        env={
            **os.environ,
            "COORDINATOR_DATABASE_URL": database_url,
            "COORDINATOR_WAREHOUSE": str(warehouse),
            "COORDINATOR_LOG_FORMAT": "text",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    refused = [line for line in done.stderr.splitlines() if "ERROR" in line]
    assert len(refused) == 1, done.stderr
    assert "workers=2" in refused[0]
    assert "SQLite serialises writers across processes" in refused[0]
    assert "PostgreSQL" in refused[0]
