"""A commit's database work does not grow with the table's history, nor with the catalog's.

A streaming job commits around the clock: at one checkpoint a minute a table gathers half a million
history rows a year, and a catalog of thousands of such tables many millions. Every statement a 1-file
commit sends must reach the rows it needs through an index made for them (a probe), never by walking
the table's history or the catalog's (a scan that grows with either).

The check: a table with 20,000 history rows and 20,000 published snapshot rows of its own beside another
table with 20,000 more, the statistics fresh (ANALYZE), and then one real commit (native, and pypaimon's
through the REST door) whose statements are captured on the service's engines. PostgreSQL plans each
again as the generic plan a prepared statement ends up with (plan_cache_mode = force_generic_plan); the
estimated cost of every read of `commits` and `snapshots` in it must be that of a probe. SQLite must
SEARCH those tables by an index that names more than the table, and not by a range (never SCAN them).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Connection, Engine, event, text

from coordinator.services import Services
from tests.support.paimon_files import PaimonTable, create_table
from tests.support.rest_writers import create_rest_table, read_rows, rest_catalog, write_rows
from tests.support.served import LiveServer

pytestmark = pytest.mark.parametrize("database_url", ["sqlite", "postgres"], indirect=True)

HISTORY = 20_000
"""History rows (and published snapshot rows) of the table committed to, and history rows of another."""

PROBE_COST = 100.0
"""PostgreSQL's estimate for one probe of a unique index is under 10; a walk through 20,000 rows of
history costs thousands."""

GROWING = ("commits", "snapshots")

WRITE_ONLY = "write-only"
"""No retention after the commits: it would read the synthetic snapshot rows."""

ROWS = pa.schema([pa.field("id", pa.int64())])


def rows(ids: range) -> pa.Table:
    return pa.Table.from_pylist([{"id": i} for i in ids], schema=ROWS)


def commit_one_file(api: TestClient, table: PaimonTable, identifier: int) -> None:
    row = {"id": identifier}
    messages = [table.message(row, newFiles=[table.append_file([row])])]
    body = {"commitUser": "stream", "identifier": identifier, "messages": messages}
    answer = api.post(f"/tables/{table.id}/commits", json=body)
    assert answer.status_code == 201, answer.text


def add_history(conn: Connection, table_id: str, *, snapshots: bool) -> None:
    """HISTORY committed rows of another writer; with `snapshots`, as many published snapshot rows with
    ids far above the head (the table is write-only, so no retention reads them)."""
    timings = json.dumps({"total": 1.0})
    for n in range(0, HISTORY, 5_000):
        ids = range(n + 1, n + 5_001)
        conn.execute(
            text(
                "INSERT INTO commits (table_id, commit_user, identifier, outcome, snapshots, timings, "
                "created_at, action, digest) VALUES (:t, 'history', :i, 'committed', '[]', :timings, "
                "1.0, 'commit', :d)"
            ),
            [{"t": table_id, "i": i, "timings": timings, "d": f"{i:064x}"} for i in ids],
        )
        if snapshots:
            conn.execute(
                text(
                    "INSERT INTO snapshots (table_id, snapshot_id, commit_user, commit_identifier, "
                    "commit_kind, time_millis, body, published) "
                    "VALUES (:t, :s, 'history', :i, 'APPEND', 0, '{}', :published)"
                ),
                [{"t": table_id, "s": 1_000_000 + i, "i": i, "published": True} for i in ids],
            )


def engines(services: Services) -> list[Engine]:
    unique: dict[int, Engine] = {}
    for engine in (services.engine, services.bookkeeping, services.probes):
        unique[id(engine)] = engine
    return list(unique.values())


@contextmanager
def captured(services: Services) -> Iterator[list[tuple[str, Any]]]:
    statements: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, many: bool) -> None:
        if not many and any(name in statement for name in GROWING):
            statements.append((statement, parameters))

    for engine in engines(services):
        event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        for engine in engines(services):
            event.remove(engine, "before_cursor_execute", record)


def generic_plan(conn: Connection, statement: str, parameters: Any) -> list[dict[str, Any]]:
    """Every node of the generic plan a prepared statement ends up with (PostgreSQL)."""
    conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_generic_plan")
    plan = conn.exec_driver_sql("EXPLAIN (FORMAT JSON) " + statement, parameters).scalar_one()
    nodes: list[dict[str, Any]] = []

    def visit(node: dict[str, Any]) -> None:
        nodes.append(node)
        for child in node.get("Plans", []):
            visit(child)

    visit(plan[0]["Plan"])
    return nodes


def query_plan(conn: Connection, statement: str, parameters: Any) -> list[str]:
    """The lines of SQLite's EXPLAIN QUERY PLAN."""
    return [row[-1] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]


def postgres_walks(conn: Connection, statement: str, parameters: Any) -> list[str]:
    """The reads of commits or snapshots in the statement's generic plan that cost more than a probe."""
    return [
        f"{node['Node Type']} on {node['Relation Name']} ({node.get('Index Name')}): "
        f"cost {node['Total Cost']}"
        for node in generic_plan(conn, statement, parameters)
        if "Scan" in node["Node Type"]
        and node.get("Relation Name") in GROWING
        and node["Total Cost"] > PROBE_COST
    ]


def sqlite_walks(conn: Connection, statement: str, parameters: Any) -> list[str]:
    """SCANs of commits or snapshots, SEARCHes of them by the table alone (but for the index of the few
    unpublished snapshots), and SEARCHes of a range."""
    walks = []
    for detail in query_plan(conn, statement, parameters):
        words = detail.split()
        if len(words) < 2 or words[1] not in GROWING:
            continue
        by_table_alone = "(table_id=?)" in detail and "ix_snapshots_unpublished" not in detail
        if words[0] == "SCAN" or by_table_alone or "<" in detail or ">" in detail:
            walks.append(detail)
    return walks


def with_history(services: Services, table_id: str, other_id: str) -> None:
    with services.engine.begin() as conn:
        add_history(conn, table_id, snapshots=True)
        add_history(conn, other_id, snapshots=False)
    with services.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE")
        conn.commit()


Check = Callable[[Connection, str, Any], list[str]]
"""What a statement's plan does wrong, by one rule: nothing when it keeps to it."""


def walks_of(
    services: Services,
    statements: list[tuple[str, Any]],
    postgres: Check = postgres_walks,
    sqlite: Check = sqlite_walks,
) -> dict[str, list[str]]:
    """Each captured statement whose plan breaks the rule (by default: walks commits or snapshots), with
    what breaks it."""
    check = postgres if services.engine.dialect.name == "postgresql" else sqlite
    walks = {}
    with services.engine.connect() as conn:
        for statement, parameters in statements:
            with conn.begin() as transaction:
                found = check(conn, statement, parameters)
                transaction.rollback()
            if found:
                walks[" ".join(statement.split())[:120]] = found
    return walks


def test_a_commit_probes_history_instead_of_walking_it(api: TestClient) -> None:
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    suffix = uuid.uuid4().hex[:6]
    options = {"options": {WRITE_ONLY: "true"}}
    table = create_table(api, "growth", f"t_{suffix}", {"id": "BIGINT"}, **options)
    other = create_table(api, "growth", f"o_{suffix}", {"id": "BIGINT"}, **options)
    commit_one_file(api, table, 1)  # the lock's row and the index exist from here on
    with_history(services, table.id, other.id)

    with captured(services) as statements:
        commit_one_file(api, table, 2)

    assert len(statements) >= 3, statements  # the context, the commit point and the finish at least
    assert not (walks := walks_of(services, statements)), json.dumps(walks, indent=1)


def test_a_rest_commit_probes_history_instead_of_walking_it(live_server: LiveServer) -> None:
    """The door Paimon's engines commit through: pypaimon's batch write, a finished snapshot."""
    services = live_server.services
    catalog = rest_catalog(live_server.url)
    suffix = uuid.uuid4().hex[:6]
    table_id, other_id = f"growth.r_{suffix}", f"growth.s_{suffix}"
    options = {WRITE_ONLY: "true"}
    create_rest_table(catalog, other_id, ROWS, options=options)
    write_rows(create_rest_table(catalog, table_id, ROWS, options=options), rows(range(2)))
    with_history(services, table_id, other_id)

    with captured(services) as statements:
        write_rows(catalog.get_table(table_id), rows(range(2, 4)))

    assert len(statements) >= 3, statements
    assert not (walks := walks_of(services, statements)), json.dumps(walks, indent=1)
    assert [r["id"] for r in read_rows(catalog.get_table(table_id))] == [0, 1, 2, 3]


def postgres_page_sorts(conn: Connection, statement: str, parameters: Any) -> list[str]:
    """How the history page's generic plan reads commits out of order: a sort of the table's rows, or a
    read through another index than the table's history in id order."""
    return [
        f"Sort by {node.get('Sort Key')}"
        if node["Node Type"] == "Sort"
        else f"{node['Node Type']} on commits ({node.get('Index Name')})"
        for node in generic_plan(conn, statement, parameters)
        if node["Node Type"] == "Sort"
        or (node.get("Relation Name") == "commits" and node.get("Index Name") != "ix_commits_table_history")
    ]


def sqlite_page_sorts(conn: Connection, statement: str, parameters: Any) -> list[str]:
    """The same in SQLite's plan: a temporary B-tree to sort, or no read of the table's history in order."""
    details = query_plan(conn, statement, parameters)
    in_order = any("USING INDEX ix_commits_table_history (table_id>? AND table_id<?)" in d for d in details)
    return [d for d in details if "TEMP B-TREE" in d] + ([] if in_order else details)


def test_a_commits_outcome_and_the_history_page_are_read_without_walking_history(api: TestClient) -> None:
    """How a client resolves a timeout (the outcome of a commit never received, or rejected) and the
    history page of the ops pages, on the same 20,000 rows of history."""
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    suffix = uuid.uuid4().hex[:6]
    options = {"options": {WRITE_ONLY: "true"}}
    table = create_table(api, "growth", f"t_{suffix}", {"id": "BIGINT"}, **options)
    other = create_table(api, "growth", f"o_{suffix}", {"id": "BIGINT"}, **options)
    commit_one_file(api, table, 1)
    with_history(services, table.id, other.id)
    conflict = json.dumps({"type": "LATEST_SNAPSHOT_MOVED", "message": "moved", "retryable": True})
    with services.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO commits (table_id, commit_user, identifier, outcome, snapshots, timings, "
                "conflict, created_at, action) VALUES (:t, 'stream', 7, 'rejected', '[]', '{}', :c, 1.0, "
                "'commit')"
            ),
            {"t": table.id, "c": conflict},
        )
    outcome = f"/tables/{table.id}/commits/stream"

    with captured(services) as statements:
        assert api.get(f"{outcome}/999999").json()["status"] == "unknown"
        rejected = api.get(f"{outcome}/7").json()
        assert (rejected["status"], rejected["conflict"]["type"]) == ("rejected", "LATEST_SNAPSHOT_MOVED")
        assert api.get(f"{outcome}/1").json()["status"] == "committed"
    assert len(statements) >= 5, statements  # committed? then the latest attempt, for the first two
    assert not (walks := walks_of(services, statements)), json.dumps(walks, indent=1)

    with captured(services) as statements:
        page = api.get(f"/tables/{table.id}/commits", params={"limit": 5}).json()["commits"]
    assert [c["identifier"] for c in page] == [7, HISTORY, HISTORY - 1, HISTORY - 2, HISTORY - 3]
    [page_read] = [s for s in statements if "ORDER BY" in s[0]]
    assert not (sorts := walks_of(services, [page_read], postgres_page_sorts, sqlite_page_sorts)), sorts
