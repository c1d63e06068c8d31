"""Named consumers of the feed: GET /events?consumer= and GET /events/stream?consumer= record the cursor
they delivered, and GET /ops/consumers shows each consumer's lag, on SQLite and PostgreSQL."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.support.commits import append_commit, post_commit
from tests.support.paimon_files import PaimonTable, create_table
from tests.support.served import LiveServer


def _table(http: TestClient | httpx.Client, database: str = "ev") -> PaimonTable:
    return create_table(http, database, f"t_{uuid.uuid4().hex[:6]}", {"id": "BIGINT"})


def _commit(http: TestClient | httpx.Client, table: PaimonTable, row: int) -> None:
    answer = post_commit(http, table, append_commit(table, [{"id": row}], user="job", identifier=row))
    assert answer.status_code == 201, answer.text


def _consumers(http: TestClient | httpx.Client) -> dict[str, dict[str, Any]]:
    answer = http.get("/ops/consumers")
    assert answer.status_code == 200, answer.text
    return {c["name"]: c for c in answer.json()["consumers"]}


def test_a_named_consumer_is_recorded_with_its_cursor_and_its_lag(api: TestClient) -> None:
    assert _consumers(api) == {}
    table = _table(api)
    for row in (1, 2):
        _commit(api, table, row)  # table-create, commit, commit: three events

    started = time.time()
    first = api.get("/events", params={"consumer": "loader", "limit": 1}).json()
    loader = _consumers(api)["loader"]
    assert loader["cursor"] == first["nextCursor"] == first["events"][0]["cursor"]
    assert loader["lagEvents"] == 2
    assert loader["lagSeconds"] >= 0
    assert started <= loader["lastSeenAt"] <= time.time()
    assert (loader["table"], loader["database"], loader["kind"]) == (None, None, None)

    rest = api.get("/events", params={"consumer": "loader", "after": first["nextCursor"]}).json()
    assert len(rest["events"]) == 2
    loader = _consumers(api)["loader"]
    assert (loader["cursor"], loader["lagEvents"], loader["lagSeconds"]) == (rest["nextCursor"], 0, 0)

    # A consumer reading one kind lags by the events of that kind only.
    commits = api.get("/events", params={"consumer": "audit", "kind": "commit", "limit": 1}).json()
    assert commits["events"][0]["kind"] == "commit"
    _commit(api, table, 3)
    consumers = _consumers(api)
    assert sorted(consumers) == ["audit", "loader"]
    assert (consumers["audit"]["kind"], consumers["audit"]["lagEvents"]) == ("commit", 2)
    assert consumers["loader"]["lagEvents"] == 1
    assert consumers["loader"]["lagSeconds"] > 0

    # An empty answer (nothing after the cursor) still says the consumer is there.
    seen = consumers["loader"]["lastSeenAt"]
    head = api.get("/events", params={"after": rest["nextCursor"]}).json()["nextCursor"]
    api.get("/events", params={"consumer": "loader", "after": head})
    again = api.get("/events", params={"consumer": "loader", "after": head})
    assert again.json()["events"] == []
    loader = _consumers(api)["loader"]
    assert (loader["cursor"], loader["lagEvents"]) == (head, 0)
    assert loader["lastSeenAt"] >= seen


def test_a_stream_consumer_is_recorded_as_its_messages_go(live_server: LiveServer) -> None:
    with httpx.Client(base_url=live_server.url, timeout=30) as http:
        table = _table(http)
        _commit(http, table, 1)
        cursors: list[int] = []
        with http.stream("GET", "/events/stream", params={"consumer": "tail", "table": table.id}) as stream:
            lines = stream.iter_lines()
            for line in lines:
                if line.startswith("id: "):
                    cursors.append(int(line[4:]))
                if len(cursors) == 2:
                    break
            deadline = time.monotonic() + 10
            while _consumers(http).get("tail", {}).get("cursor") != cursors[-1]:
                assert time.monotonic() < deadline, _consumers(http)
                time.sleep(0.1)
            tail = _consumers(http)["tail"]
            assert (tail["table"], tail["lagEvents"]) == (table.id, 0)
            _commit(http, table, 2)
            for line in lines:
                if line.startswith("id: "):
                    cursors.append(int(line[4:]))
                    break
            deadline = time.monotonic() + 10
            while _consumers(http)["tail"]["cursor"] != cursors[-1]:
                assert time.monotonic() < deadline, _consumers(http)
                time.sleep(0.1)
        assert _consumers(http)["tail"]["lagEvents"] == 0


@pytest.mark.parametrize("name", ["", "1st", "has space", "a/b", "x" * 129, "é"])
def test_a_bad_consumer_name_is_a_422_naming_it(api: TestClient, name: str) -> None:
    for path in ("/events", "/events/stream"):
        answer = api.get(path, params={"consumer": name})
        assert answer.status_code == 422, answer.text
        assert answer.json()["field"] == "consumer", answer.json()
    assert _consumers(api) == {}


def test_consumers_are_for_admins_and_readers_of_everything(secured: LiveServer) -> None:
    tokens = secured.services.tokens
    admin = tokens.create("ops", "admin").token
    reader = tokens.create("on-call", "reader").token
    limited = tokens.create("dash-a", "reader", database="a").token
    writer = tokens.create("job-a", "writer", database="a").token
    with httpx.Client(base_url=secured.url, timeout=30) as http:

        def get(path: str, token: str | None, **params: Any) -> httpx.Response:
            headers = {} if token is None else {"Authorization": f"Bearer {token}"}
            return http.get(path, headers=headers, params=params)

        assert get("/ops/consumers", None).status_code == 401
        assert get("/ops/consumers", "pcc_0000_wrong").status_code == 401
        for token in (limited, writer):
            refused = get("/ops/consumers", token)
            assert refused.status_code == 403, refused.text
        # A limited token may still name itself a consumer of what it may read.
        assert get("/events", limited, consumer="dash_a").status_code == 200
        assert get("/events", None, consumer="nobody").status_code == 401
        for token in (admin, reader):
            answer = get("/ops/consumers", token)
            assert answer.status_code == 200, answer.text
            assert [c["name"] for c in answer.json()["consumers"]] == ["dash_a"]


def test_the_head_is_the_newest_cursor_the_filter_matches(api: TestClient) -> None:
    assert api.get("/events/head").json() == {"cursor": 0}
    one, two = _table(api), _table(api)
    _commit(api, one, 1)
    _commit(api, two, 1)
    every = api.get("/events", params={"limit": 1000}).json()["events"]
    assert api.get("/events/head").json() == {"cursor": every[-1]["cursor"]}
    newest_of_one = [e["cursor"] for e in every if e["tableId"] == one.id][-1]
    assert newest_of_one < every[-1]["cursor"]
    assert api.get("/events/head", params={"table": one.id}).json() == {"cursor": newest_of_one}
    # Asking after the head is asking for what is still to come.
    head = api.get("/events/head").json()["cursor"]
    assert api.get("/events", params={"after": head}).json()["events"] == []
    _commit(api, one, 2)
    assert [e["kind"] for e in api.get("/events", params={"after": head}).json()["events"]] == ["commit"]
    answer = api.get("/events/head", params={"kind": "nope"})
    assert (answer.status_code, answer.json()["field"]) == (422, "kind")
