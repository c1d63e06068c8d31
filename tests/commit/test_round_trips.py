"""Round trips to the database per commit, counted on the engines (coordinator_db_round_trips_total).

A streaming job commits one small file per checkpoint, around the clock: on PostgreSQL such a commit takes
the lock, reads its context, probes the live-file index, and then makes the commit point and the finish
one statement each (db/repositories/one_statement.py).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from coordinator.db import repositories as repo
from coordinator.services import Services
from coordinator.usecases.tables import TABLE_LOCK_PREFIX
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows

pytestmark = pytest.mark.parametrize("database_url", ["postgres"], indirect=True)

ROUND_TRIPS = 6
"""At most this many for a 1-file commit to a table the process has committed to before."""


def round_trips(services: Services) -> float:
    metrics = services.metrics.db_round_trips.collect()
    return sum(float(s.value) for m in metrics for s in m.samples if s.name.endswith("_total"))


def commit_one_file(api: TestClient, table: PaimonTable, identifier: int) -> None:
    row = {"dt": "2024-01-01", "id": identifier}
    messages = [table.message(row, newFiles=[table.append_file([row])])]
    body = {"commitUser": "stream", "identifier": identifier, "messages": messages}
    answer = api.post(f"/tables/{table.id}/commits", json=body)
    assert answer.status_code == 201, answer.text
    finished(api)


def finished(api: TestClient) -> None:
    """Once the answered commits' finishes ran (after the answers, usecases/hold_ends.py): their round
    trips are the commit's."""
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    services.holds.ends.settled()


def test_a_one_file_commit_makes_at_most_six_round_trips(api: TestClient, warehouse: Path) -> None:
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    table = create_table(
        api, "rt", f"t_{uuid.uuid4().hex[:6]}", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"]
    )
    commit_one_file(api, table, 1)  # the first commit creates the lock's row and builds the index

    counts = []
    for identifier in range(2, 6):
        before = round_trips(services)
        commit_one_file(api, table, identifier)
        counts.append(round_trips(services) - before)

    assert max(counts) <= ROUND_TRIPS, counts
    # What the statements wrote is what the transactions would have: the rows, the history with its
    # finished timings, the snapshots published, and the lock free again.
    assert sorted(r["id"] for r in pypaimon_rows(warehouse, table.id)) == [1, 2, 3, 4, 5]
    history = api.get(f"/tables/{table.id}/commits").json()["commits"]
    assert [c["identifier"] for c in history] == [5, 4, 3, 2, 1]
    assert all("total" in c["timings"] for c in history)
    with services.engine.connect() as conn:
        assert repo.unpublished_snapshots(conn, table.id) == []
    assert services.locks.try_acquire(f"{TABLE_LOCK_PREFIX}{table.id}", "a test") is not None


def test_the_commit_points_statement_is_not_parsed_again_for_every_commit(
    api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from psycopg import _queries

    parsed_again: list[int] = []
    uncached = _queries._query2pg_nocache

    def counted(*args: object) -> object:
        parsed_again.append(len(args[0]))  # type: ignore[arg-type]
        return uncached(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_queries, "_query2pg_nocache", counted)
    table = create_table(
        api, "rt", f"t_{uuid.uuid4().hex[:6]}", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"]
    )
    for identifier in range(1, 5):
        commit_one_file(api, table, identifier)

    # psycopg converts a statement's placeholders once and remembers it, but only up to a length the
    # commit point's statement (several kilobytes) is beyond unless the engine raises it.
    assert parsed_again == []


GROUP_ROUND_TRIPS = 5
"""At most this many for a group of six appends to one table: the lock, the group's context, one probe
of the live-file index for all six, one commit-point statement and one finish (a transaction and a probe
per commit, as before, made it 23)."""


def test_a_group_of_appends_is_recorded_by_one_statement(api: TestClient, warehouse: Path) -> None:
    from tests.commit.test_group_commit import Queued

    services: Services = api.app.state.services  # type: ignore[attr-defined]
    table = create_table(
        api, "rt", f"t_{uuid.uuid4().hex[:6]}", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"]
    )
    commit_one_file(api, table, 1)
    outside = services.locks.acquire(f"{TABLE_LOCK_PREFIX}{table.id}", "a test", timeout_seconds=5)
    queued = Queued(services, table)
    for identifier in range(2, 8):
        row = {"dt": "2024-01-01", "id": identifier}
        messages = [table.message(row, newFiles=[table.append_file([row])])]
        queued.send(str(identifier), {"commitUser": "stream", "identifier": identifier, "messages": messages})
    services.locks.release(outside)

    before = round_trips(services)
    queued.join()
    finished(api)
    spent = round_trips(services) - before

    assert {queued.response(str(i)).group_size for i in range(2, 8)} == {6}
    assert spent <= GROUP_ROUND_TRIPS, spent
    assert sorted(r["id"] for r in pypaimon_rows(warehouse, table.id)) == list(range(1, 8))
    with services.engine.connect() as conn:
        assert repo.unpublished_snapshots(conn, table.id) == []
        indexed = conn.execute(
            text("SELECT count(*), max(added_in) FROM live_files WHERE table_id = :t"), {"t": table.id}
        ).one()
        at = conn.execute(text("SELECT snapshot_id FROM live_index WHERE table_id = :t"), {"t": table.id})
        assert tuple(indexed) == (7, 7)
        assert at.scalar_one() == 7
    history = api.get(f"/tables/{table.id}/commits").json()["commits"]
    assert [c["identifier"] for c in history] == [7, 6, 5, 4, 3, 2, 1]
    assert all("total" in c["timings"] for c in history)
