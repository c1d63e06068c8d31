"""The feed while its database is down (a PostgreSQL server of this test's own, stopped and started
again): GET /events is a 503 with Retry-After, never a 500; an open stream ends instead of hanging; after
the restart the consumer resumes from its last cursor and misses nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from coordinator.db.migrate import upgrade
from coordinator.settings import Settings
from tests.support.paimon_files import create_table
from tests.support.private_postgres import PrivatePostgres, private_postgres
from tests.support.served import LiveServer

pytestmark = pytest.mark.postgres


@pytest.fixture
def database() -> Iterator[PrivatePostgres]:
    with private_postgres() as server:
        upgrade(server.url())
        yield server


def test_a_stream_ends_and_a_poll_is_503_while_the_database_is_down(
    database: PrivatePostgres, warehouse: Path
) -> None:
    settings = Settings(database_url=database.url(), warehouse=str(warehouse), auto_migrate=False)
    with LiveServer(settings) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        create_table(http, "down", "a", {"id": "BIGINT"})
        last = http.get("/events").json()["nextCursor"]
        ended = threading.Event()

        def stream() -> None:
            with http.stream("GET", "/events/stream", params={"after": last}) as answer:
                assert answer.status_code == 200
                for _ in answer.iter_lines():
                    pass
            ended.set()

        reader = threading.Thread(target=stream, daemon=True)
        reader.start()
        time.sleep(0.5)
        database.stop()
        try:
            assert ended.wait(20), "the stream did not end with its database down"
            down = http.get("/events", params={"after": last})
            assert down.status_code == 503, down.text
            assert "Retry-After" in down.headers
        finally:
            database.start()
        deadline = time.monotonic() + 30
        while http.get("/health").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        create_table(http, "down", "b", {"id": "BIGINT"})
        resumed = http.get("/events", params={"after": last}).json()["events"]
        assert [(e["kind"], e["tableId"]) for e in resumed] == [("table-create", "down.b")]
