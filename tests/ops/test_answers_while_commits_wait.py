"""The ops API answers while commits wait: 50 commits queued behind a held table lock, on a real uvicorn."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from coordinator.settings import Settings
from tests.support.paimon_files import create_table
from tests.support.served import LiveServer
from tests.support.waiting import wait_for

COMMITS = 50
"""More than AnyIO's default 40 threads: on one limiter, every thread would be a waiting commit."""
ANSWER_WITHIN_SECONDS = 1.0
OPS_PATHS = ("/health", "/locks", "/metrics", "/ops/overview", "/commits", "/tables")
"""The ops API and the dashboard's data."""


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """A lease and an acquire timeout that outlast the test's hold on the lock."""
    return settings.model_copy(update={"lock_lease_seconds": 120, "lock_acquire_timeout_seconds": 120})


def _timed_get(ops: httpx.Client, path: str) -> tuple[int, float]:
    """Status and seconds of one GET (a timeout reads as status 0)."""
    started = time.monotonic()
    try:
        status = ops.get(path).status_code
    except httpx.TimeoutException:
        status = 0
    return status, time.monotonic() - started


@pytest.mark.timeout(300)
def test_health_locks_metrics_and_overview_answer_while_50_commits_wait_for_a_held_lock(
    live_server: LiveServer,
) -> None:
    url = live_server.url
    services = live_server.services
    limits = httpx.Limits(max_connections=COMMITS + 10)
    with (
        httpx.Client(base_url=url, timeout=180, limits=limits) as http,
        httpx.Client(base_url=url, timeout=ANSWER_WITHIN_SECONDS * 5) as ops,
    ):
        assert ops.get("/health").status_code == 200  # connected before the commits start
        table = create_table(http, "db", "busy", {"id": "BIGINT", "v": "STRING"})
        files = [table.append_file([{"id": n, "v": "x"}]) for n in range(COMMITS)]
        lock_id = services.tables.get(table.id).lock_id
        holder = services.locks.acquire(lock_id, "holder", timeout_seconds=10)

        answers: dict[int, int | str] = {}

        def commit(n: int) -> None:
            body = {
                "commitUser": f"writer-{n}",
                "identifier": 1,
                "messages": [{"partition": {}, "bucket": 0, "newFiles": [files[n]]}],
            }
            try:
                answers[n] = http.post(f"/tables/{table.id}/commits", json=body).status_code
            except httpx.HTTPError as error:  # recorded: an exception in a thread is otherwise lost
                answers[n] = repr(error)

        threads = [threading.Thread(target=commit, args=(n,), daemon=True) for n in range(COMMITS)]
        try:
            for t in threads:
                t.start()
            # Read in-process, not over HTTP: on a starved server the HTTP answer is what is under test.
            wait_for(
                lambda: len(services.in_flight.listing()) >= 40,
                "40 commits waiting for the lock",
                seconds=60,
            )
            time.sleep(0.5)  # and the last ten have reached the server

            timings = {path: _timed_get(ops, path) for path in OPS_PATHS}
            slow = {p: t for p, t in timings.items() if t[0] != 200 or t[1] >= ANSWER_WITHIN_SECONDS}
            assert not slow, f"(status, seconds) past {ANSWER_WITHIN_SECONDS} s while commits wait: {slow}"

            held = next(lock for lock in ops.get("/locks").json()["locks"] if lock["lockId"] == lock_id)
            assert held["owner"] == "holder"
            assert len(held["waiters"]) >= 40
            assert not answers, "no commit can finish while the lock is held"
        finally:
            services.locks.release(holder)
        for t in threads:
            t.join(timeout=120)

        assert answers == dict.fromkeys(range(COMMITS), 201)
        live = http.get(f"/tables/{table.id}/files").json()
        assert live["snapshotId"] == COMMITS
        assert sorted(f["fileName"] for f in live["files"]) == sorted(f["fileName"] for f in files)
