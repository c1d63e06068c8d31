"""A statement stuck in PostgreSQL (behind a row another session holds) is cancelled after the setting
database_statement_timeout_seconds and answered as the database's unavailability."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from coordinator.db.engine import bookkeeping_engine, make_engine, probe_engine
from coordinator.db.faults import RETRY_AFTER_SECONDS
from coordinator.settings import Settings
from tests.support.commits import append_commit
from tests.support.paimon_files import create_table, pypaimon_rows
from tests.support.served import LiveServer

FIELDS = {"id": "BIGINT", "writer": "INT"}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_commit_stuck_behind_a_row_lock_is_cancelled_with_503_and_its_resend_commits_once(
    settings: Settings, warehouse_location: str
) -> None:
    """A commit point waiting on a row another session holds (an operator's open transaction, a stuck
    job) is cancelled after database_statement_timeout_seconds: 503 with Retry-After, nothing recorded,
    the thread and connection free again; the writer's resend once the row is free commits once.
    Without the timeout the commit would wait as long as the other session holds the row."""
    settings = settings.model_copy(update={"database_statement_timeout_seconds": 1.0})
    with LiveServer(settings) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        table = create_table(http, "db", "t", FIELDS)
        body = append_commit(table, [{"id": 1, "writer": 1}], user="w", identifier=1)
        other_session = create_engine(settings.database_url)
        try:
            with other_session.connect() as holder:
                holder.execute(
                    text("SELECT 1 FROM paimon_tables WHERE id = :id FOR UPDATE"), {"id": table.id}
                )
                started = time.monotonic()
                stuck = http.post(f"/tables/{table.id}/commits", json=body)
                waited = time.monotonic() - started
                assert stuck.status_code == 503, stuck.text
                assert stuck.json()["code"] == "DATABASE_UNAVAILABLE"
                assert stuck.headers["retry-after"] == str(RETRY_AFTER_SECONDS)
                assert waited < 10
        finally:
            other_session.dispose()
        assert [c for c in _history(http, table.id) if c["outcome"] == "committed"] == []
        resent = http.post(f"/tables/{table.id}/commits", json=body)
        assert resent.status_code == 201, resent.text
        again = http.post(f"/tables/{table.id}/commits", json=body)
        assert again.status_code == 200
        assert again.json()["deduplicated"]
        committed = [c for c in _history(http, table.id) if c["outcome"] == "committed"]
        assert [(c["commitUser"], c["identifier"]) for c in committed] == [("w", 1)]
        assert pypaimon_rows(warehouse_location, table.id) == [{"id": 1, "writer": 1}]


def _history(http: httpx.Client, table_id: str) -> list[dict[str, Any]]:
    answer = http.get(f"/tables/{table_id}/commits")
    assert answer.status_code == 200, answer.text
    commits: list[dict[str, Any]] = answer.json()["commits"]
    return commits


@pytest.mark.postgres
def test_the_engines_made_from_the_service_engine_keep_its_statement_timeout(pg_url: str) -> None:
    """The side engines (bookkeeping without WAL flush, index-only probes) add their session setting to
    the statement timeout instead of replacing it, and a URL's own `options` are kept too."""
    engine = make_engine(pg_url + "?options=-c%20application_name%3Dops", statement_timeout_seconds=2.5)
    engines = {"service": engine, "bookkeeping": bookkeeping_engine(engine), "probe": probe_engine(engine)}
    try:
        shown = {}
        for name, each in engines.items():
            with each.connect() as conn:
                shown[name] = [
                    conn.execute(text(f"SHOW {setting}")).scalar_one()
                    for setting in (
                        "statement_timeout",
                        "application_name",
                        "synchronous_commit",
                        "enable_seqscan",
                    )
                ]
    finally:
        for each in engines.values():
            each.dispose()
    assert shown == {
        "service": ["2500ms", "ops", "on", "on"],
        "bookkeeping": ["2500ms", "ops", "off", "on"],
        "probe": ["2500ms", "ops", "on", "off"],
    }
