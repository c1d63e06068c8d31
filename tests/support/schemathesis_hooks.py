"""Schemathesis hooks and checks, loaded by the `schemathesis run` that tests/api/test_schemathesis.py
starts (SCHEMATHESIS_HOOKS): every call reaches a real table, and a refused request (4xx) changes nothing.

Before each call the fuzzed table is created again if an earlier call dropped it; the warehouse (every
file, its size and modification time) and the database rows that are a table's state (tables,
databases, snapshots, history, tokens, audit, the event outbox) are taken before and after the call. The check
`refused_requests_change_nothing` fails a 4xx that changed either; a 409 may record its rejection in the
history by design (a commit conflict is history), so for it only storage is compared. After a call that
succeeded, or a 409, GET /locks comes before the state is taken: it waits for the finish of a commit the
service answered (the published mark, the timings, a rejection's row), which runs after the answer. The
lock table and the live-file index are bookkeeping: a refused commit may take and free the lock, or
rebuild the index, and neither is the table's state. `no_server_error` fails any 5xx but a 501 the operation
documents.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import httpx
import schemathesis
from sqlalchemy import create_engine, select, text

from coordinator.db.models import Base

SERVER = os.environ.get("FUZZ_SERVER_URL", "")
WAREHOUSE = os.environ.get("FUZZ_WAREHOUSE", "")
DATABASE_URL = os.environ.get("FUZZ_DATABASE_URL", "")
TABLE = json.loads(os.environ.get("FUZZ_TABLE", "{}"))
"""The CreateTableRequest of the table every table route is pointed at."""
TABLE_ID = f"{TABLE.get('database')}.{TABLE.get('name')}"
STATE_TABLES = (
    "paimon_tables",
    "paimon_databases",
    "snapshots",
    "commits",
    "api_tokens",
    "audit_log",
    "events",
)
LONGEST_WAIT = 0.2
"""GET /events?wait= is answered after the wait when nothing happens: the run asks for no longer."""

State = tuple[dict[str, tuple[int, int]], str]
_engine = create_engine(DATABASE_URL) if DATABASE_URL else None
_current: State | None = None
"""The state after the last call: the next call's state before it (nothing else writes meanwhile)."""
_calls: dict[str, tuple[State, State | None]] = {}


def files() -> dict[str, tuple[int, int]]:
    """Every file of the local warehouse with its size and modification time: a file written, rewritten
    or deleted changes this (a digest of every byte per call would take most of the run)."""
    found = {}
    for folder, _, names in os.walk(WAREHOUSE):
        for name in names:
            path = os.path.join(folder, name)
            stat = os.stat(path)
            found[os.path.relpath(path, WAREHOUSE)] = (stat.st_size, stat.st_mtime_ns)
    return found


def rows() -> str:
    """A digest of every row of the tables that hold the tables' state."""
    assert _engine is not None
    with _engine.connect() as conn:
        tables = {
            name: sorted(repr(tuple(r)) for r in conn.execute(select(Base.metadata.tables[name])))
            for name in STATE_TABLES
        }
    return hashlib.sha256(repr(tables).encode()).hexdigest()


def state() -> State:
    return files(), rows()


def ensure_table() -> bool:
    """The fuzzed table exists: a drop of it (or of its database) earlier in the run is undone, by
    creating it again, or, when the drop left its files, by registering its folder. True if it was."""
    assert _engine is not None
    with _engine.connect() as conn:
        found = conn.execute(text("SELECT 1 FROM paimon_tables WHERE id = :id"), {"id": TABLE_ID}).first()
    if found is not None:
        return False
    created = httpx.post(f"{SERVER}/tables", json=TABLE, timeout=60)
    if created.status_code == 409 and "already holds a Paimon table" in created.text:
        location = created.json()["message"].split(" already holds")[0]
        register = {"database": TABLE["database"], "name": TABLE["name"], "location": location}
        created = httpx.post(f"{SERVER}/tables", json=register, timeout=60)
    assert created.status_code == 201, created.text
    return True


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    global _current
    _shorter_wait(case)
    if ensure_table() or _current is None:
        _current = state()
    _calls[case.id] = (_current, None)
    _current = None  # until after_call says what the call left


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    global _current
    if response.status_code < 400 or response.status_code == 409:
        # A commit is answered before its finish (usecases/hold_ends.py); the service's GET /locks waits
        # for the finishes of the commits it answered, so the state taken next is the call's whole work.
        httpx.get(f"{SERVER}/locks", timeout=60).raise_for_status()
    _current = state()
    if case.id in _calls:
        _calls[case.id] = (_calls[case.id][0], _current)


def _shorter_wait(case: Any) -> None:
    """A long poll's valid wait cut to LONGEST_WAIT: a valid wait of 60 s is as valid at 0.2 s, and the
    run would otherwise spend minutes waiting for events nobody writes."""
    query = case.query if isinstance(case.query, dict) else {}
    try:
        wait = float(query.get("wait", 0))
    except (TypeError, ValueError):
        return
    if case.path == "/events" and LONGEST_WAIT < wait <= 60:
        query["wait"] = LONGEST_WAIT


def _documented(case: Any, status: int) -> bool:
    return str(status) in case.operation.definition.raw.get("responses", {})


@schemathesis.check
def no_server_error(ctx: Any, response: Any, case: Any) -> bool | None:
    """No 5xx, but a 501 an operation documents: a part of Paimon's REST catalog protocol the
    coordinator does not serve (a data token for a warehouse not on S3, a branch, a system table)."""
    status = response.status_code
    if status >= 500 and not (status == 501 and _documented(case, 501)):
        raise AssertionError(f"{status}: {response.text[:500]}")
    return True


@schemathesis.check
def refused_requests_change_nothing(ctx: Any, response: Any, case: Any) -> bool | None:
    """A 4xx leaves the warehouse's files and the tables' rows as they were (a 409 only the files)."""
    if not 400 <= response.status_code < 500:
        return None
    before, after = _calls.get(case.id, (None, None))
    if before is None or after is None:
        return None
    (files_before, rows_before), (files_after, rows_after) = before, after
    if files_before != files_after:
        changed = sorted(
            name
            for name in set(files_before) | set(files_after)
            if files_before.get(name) != files_after.get(name)
        )
        raise AssertionError(f"a {response.status_code} changed files on storage: {changed[:10]}")
    if response.status_code != 409 and rows_before != rows_after:
        raise AssertionError(f"a {response.status_code} changed rows in the database")
    return True
