"""A replica SIGKILLed in the middle of a multi-table transaction, in real processes on both databases:
killed after the commit point, before the second table is published, both tables show the transaction
once it restarts; killed before the commit point, neither does, and a resend commits it once."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.paimon_files import PaimonTable, create_table, file_exists, pypaimon_rows
from tests.support.served import ServedCoordinator

pytestmark = pytest.mark.slow

LEASE = {"COORDINATOR_LOCK_LEASE_SECONDS": "2"}
"""Short leases: the restarted replica takes the dead one's locks after them."""


def _body(tables: list[PaimonTable]) -> dict[str, Any]:
    return {
        "commitUser": "loader",
        "identifier": 1,
        "tables": [
            {"table": t.id, "messages": [t.append_message([{"id": i}])]}
            for i, t in enumerate(tables, start=1)
        ],
    }


def _kill_while_committing(doomed: ServedCoordinator, body: dict[str, Any], marker: Path) -> None:
    """Send the transaction, and SIGKILL the replica once it stands at its stop point."""
    sender = threading.Thread(target=_post_ignoring_the_end, args=(doomed.url, body), daemon=True)
    sender.start()
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline, (
            f"never reached the stop point; log:\n{doomed.log.read_text()[-3000:]}"
        )
        time.sleep(0.02)
    os.kill(doomed.process.pid, signal.SIGKILL)
    doomed.process.wait(timeout=30)
    sender.join(timeout=30)
    time.sleep(2.5)  # the dead replica's leases run out


def _post_ignoring_the_end(url: str, body: dict[str, Any]) -> None:
    try:
        httpx.post(f"{url}/transactions", json=body, timeout=120)
    except httpx.TransportError:
        pass  # the replica died with the request in it: the answer is lost, as a writer would see


def _killed_in_a_transaction(
    stop: tuple[str, int], database_url: str, warehouse: Path, tmp_path: Path
) -> tuple[PaimonTable, PaimonTable, dict[str, Any]]:
    """Two tables, and a transaction over both that a replica was SIGKILLed in, at the nth call of
    `stop`; returns the tables and the transaction's body."""
    marker = tmp_path / "stopped"
    where, nth = stop
    with ServedCoordinator(
        database_url, warehouse, tmp_path / "doomed.log", stop_at=(where, nth, marker), env=LEASE
    ) as doomed:
        fact, dim = (create_table(doomed.http, "sales", name, {"id": "BIGINT"}) for name in ("fact", "dim"))
        body = _body([fact, dim])
        _kill_while_committing(doomed, body, marker)
    return fact, dim, body


def test_killed_before_the_second_table_is_published_both_show_it_after_a_restart(
    database_url: str, warehouse: Path, tmp_path: Path
) -> None:
    stop = ("coordinator.commit.publish:Publication.publish_group", 2)
    fact, dim, body = _killed_in_a_transaction(stop, database_url, warehouse, tmp_path)
    assert file_exists(f"{fact.location}/snapshot/snapshot-1")
    assert not file_exists(f"{dim.location}/snapshot/snapshot-1")  # the commit point decided it; unpublished
    with ServedCoordinator(database_url, warehouse, tmp_path / "restarted.log", env=LEASE) as restarted:
        # Start-up recovery published the rest: no request needed.
        assert pypaimon_rows(warehouse, fact.id) == [{"id": 1}]
        assert pypaimon_rows(warehouse, dim.id) == [{"id": 2}]
        resend = restarted.http.post("/transactions", json=body)
        assert resend.status_code == 200, resend.text
        assert [[s["id"] for s in t["snapshots"]] for t in resend.json()["tables"]] == [[1], [1]]
        assert resend.json()["deduplicated"] is True


def test_killed_before_the_commit_point_neither_shows_it_and_a_resend_commits_it_once(
    database_url: str, warehouse: Path, tmp_path: Path
) -> None:
    stop = ("coordinator.commit.commit_point:commit_point", 1)
    fact, dim, body = _killed_in_a_transaction(stop, database_url, warehouse, tmp_path)
    with ServedCoordinator(database_url, warehouse, tmp_path / "restarted.log", env=LEASE) as restarted:
        for table in (fact, dim):
            assert restarted.http.get(f"/tables/{table.id}/snapshots/latest").status_code == 404
            assert pypaimon_rows(warehouse, table.id) == []
        resend = restarted.http.post("/transactions", json=body)
        assert resend.status_code == 201, resend.text
        assert [[s["id"] for s in t["snapshots"]] for t in resend.json()["tables"]] == [[1], [1]]
        assert pypaimon_rows(warehouse, fact.id) == [{"id": 1}]
        assert pypaimon_rows(warehouse, dim.id) == [{"id": 2}]
