"""Following the feed over real HTTP (uvicorn): the clients' events(), the SSE stream resumed from
Last-Event-ID, `coordinator-client events --follow`, and who sees which events."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from itertools import islice
from typing import Any

import anyio
import httpx
import pytest

from coordinator_client import AsyncCoordinatorClient, CoordinatorClient
from coordinator_client.errors import ApiError, Forbidden
from coordinator_client.models import EventModel
from tests.support.commits import append_commit, post_commit
from tests.support.paimon_files import PaimonTable, create_table
from tests.support.served import LiveServer
from tests.support.tokens import Authed, bearer

FIELDS = {"dt": "STRING", "id": "BIGINT"}


def a_table(http: Any, database: str = "fl") -> PaimonTable:
    return create_table(http, database, f"t_{uuid.uuid4().hex[:6]}", FIELDS, partitionKeys=["dt"])


def commit_rows(http: Any, table: PaimonTable, count: int, user: str = "job") -> None:
    for i in range(1, count + 1):
        body = append_commit(table, [{"dt": "p", "id": i}], user=user, identifier=i)
        answer = post_commit(http, table, body)
        assert answer.status_code == 201, answer.text


def test_the_client_follows_the_feed_as_commits_happen(http: httpx.Client, client: CoordinatorClient) -> None:
    table = a_table(http)
    start = client.events_page().next_cursor
    got: list[EventModel] = []

    def follow() -> None:
        got.extend(islice(client.events(start, table=table.id, wait=2), 5))

    follower = threading.Thread(target=follow)
    follower.start()
    commit_rows(http, table, 5)
    follower.join(30)
    assert not follower.is_alive()
    assert [(e.kind, e.commit_identifier) for e in got] == [("commit", i) for i in range(1, 6)]
    assert [e.cursor for e in got] == sorted({e.cursor for e in got})


def test_the_async_client_follows_the_feed(http: httpx.Client, live_server: LiveServer) -> None:
    table = a_table(http)
    commit_rows(http, table, 3)

    async def follow() -> list[EventModel]:
        async with AsyncCoordinatorClient(live_server.url, timeout=10) as client:
            found = []
            async for event in client.events(0, table=table.id, wait=1):
                found.append(event)
                if len(found) == 4:
                    return found
        raise AssertionError("the feed ended")

    found = anyio.run(follow)
    assert [e.kind for e in found] == ["table-create", "commit", "commit", "commit"]


def test_an_expired_cursor_is_raised_not_retried(
    http: httpx.Client, live_server: LiveServer, client: CoordinatorClient
) -> None:
    a_table(http)
    live_server.services.events.retention_seconds = 0.0
    live_server.services.events.prune()
    with pytest.raises(ApiError) as raised:
        next(client.events(0))
    assert raised.value.status_code == 410
    assert raised.value.code == "CURSOR_EXPIRED"


def sse_events(lines: Any, count: int) -> list[dict[str, Any]]:
    """The first `count` SSE messages of a stream's lines: id, event and data."""
    out: list[dict[str, Any]] = []
    message: dict[str, Any] = {}
    for line in lines:
        if line.startswith(":"):
            continue
        if not line:
            if message:
                out.append(message)
                message = {}
                if len(out) == count:
                    return out
            continue
        key, _, value = line.partition(": ")
        message[key] = value
    raise AssertionError(f"the stream ended after {out}")


def test_the_stream_resumes_after_last_event_id(http: httpx.Client) -> None:
    table = a_table(http)
    commit_rows(http, table, 4)
    params = {"table": table.id}
    with http.stream("GET", "/events/stream", params=params, timeout=10) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        first = sse_events(stream.iter_lines(), 3)
    assert [m["event"] for m in first] == ["table-create", "commit", "commit"]
    assert all(json.loads(m["data"])["cursor"] == int(m["id"]) for m in first)

    # Reconnecting as an EventSource does: the rest, nothing twice, and then what comes next.
    headers = {"Last-Event-ID": first[-1]["id"]}
    with http.stream("GET", "/events/stream", params=params, headers=headers, timeout=10) as stream:
        lines = stream.iter_lines()
        rest = sse_events(lines, 2)
        commit_rows(http, table, 1, user="later")
        (later,) = sse_events(lines, 1)
    assert [json.loads(m["data"])["commitIdentifier"] for m in rest] == [3, 4]
    assert json.loads(later["data"])["commitUser"] == "later"
    assert int(first[-1]["id"]) < int(rest[0]["id"]) < int(rest[1]["id"]) < int(later["id"])


def test_events_follow_prints_each_event_as_a_json_line(http: httpx.Client, live_server: LiveServer) -> None:
    table = a_table(http)
    start = http.get("/events").json()["nextCursor"]
    cli = [sys.executable, "-m", "coordinator_client", "--url", live_server.url]
    follow = [*cli, "events", "--follow", "--after", str(start), "--table", table.id]
    follower = subprocess.Popen(follow, stdout=subprocess.PIPE, text=True)
    try:
        commit_rows(http, table, 2)
        assert follower.stdout is not None
        lines = [json.loads(follower.stdout.readline()) for _ in range(2)]
    finally:
        follower.send_signal(signal.SIGINT)
        code = follower.wait(20)
        if follower.stdout is not None:
            follower.stdout.close()
    assert [(e["kind"], e["commitIdentifier"]) for e in lines] == [("commit", 1), ("commit", 2)]
    assert code == 0

    page = subprocess.run(
        [*cli, "events", "--table", table.id, "--kind", "table-create"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ},
    )
    assert [e["kind"] for e in json.loads(page.stdout)["events"]] == ["table-create"]


def test_a_token_sees_only_its_grants_events(secured: LiveServer) -> None:
    tokens = secured.services.tokens
    admin = tokens.create("ops", "admin").token
    reader_a = tokens.create("a-reader", "reader", database="ga").token
    with httpx.Client(base_url=secured.url, timeout=30) as http:
        a, b = a_table(Authed(http, admin), "ga"), a_table(Authed(http, admin), "gb")
        assert http.get("/events").status_code == 401
        seen = http.get("/events", headers=bearer(reader_a)).json()["events"]
        assert {e["tableId"] for e in seen} == {a.id}
        everything = http.get("/events", headers=bearer(admin)).json()["events"]
        assert {a.id, b.id} <= {e["tableId"] for e in everything}
        for params in ({"table": b.id}, {"database": "gb"}):
            answer = http.get("/events", params=params, headers=bearer(reader_a))
            assert answer.status_code == 403, answer.text
        stream = http.get("/events/stream", params={"table": b.id}, headers=bearer(reader_a))
        assert stream.status_code == 403
    with CoordinatorClient(secured.url, token=reader_a) as client, pytest.raises(Forbidden):
        next(client.events(table=b.id))
