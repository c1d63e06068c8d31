"""The NATS JetStream publisher against a real nats-server: every event once, on its table's subject,
with the event's cursor as its message id; a server down for a while stops nothing but the publisher,
whose lag grows and then drains once the server is back."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from coordinator.app import create_app
from coordinator.settings import Settings
from tests.support.commits import append_commit, post_commit
from tests.support.nats import NatsServer, stream_messages
from tests.support.paimon_files import PaimonTable, create_table
from tests.support.waiting import wait_for

FIELDS = {"dt": "STRING", "id": "BIGINT"}
STREAM = "EVENTS_TEST"


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    with NatsServer(tmp_path / "jetstream", tmp_path / "nats.log") as server:
        yield server


@pytest.fixture
def api(settings: Settings, nats_server: NatsServer) -> Iterator[TestClient]:
    published = settings.model_copy(
        update={
            "events_nats_url": nats_server.url,
            "events_nats_stream": STREAM,
            "events_nats_subject": "lake.events",
            "events_publisher_backoff_seconds": 0.05,
            "events_publisher_max_backoff_seconds": 0.5,
            "events_poll_seconds": 0.05,
        }
    )
    with TestClient(create_app(published)) as client:
        yield client


def nats_state(api: TestClient) -> dict[str, Any]:
    (state,) = [p for p in api.get("/ops/publishers").json()["publishers"] if p["name"] == "nats"]
    return dict(state)


def commit(api: TestClient, table: PaimonTable, i: int) -> None:
    post_commit(api, table, append_commit(table, [{"dt": "a", "id": i}])).raise_for_status()


def test_every_event_reaches_the_stream_once_with_its_cursor_as_message_id(
    api: TestClient, nats_server: NatsServer
) -> None:
    tables = [create_table(api, "js", f"t{n}_{uuid.uuid4().hex[:6]}", FIELDS) for n in range(2)]
    for i in range(5):
        for table in tables:
            commit(api, table, i)
    feed = api.get("/events", params={"limit": 1000}).json()["events"]
    wait_for(lambda: nats_state(api)["lagEvents"] == 0, "the publisher to catch up")

    held = stream_messages(nats_server.url, STREAM)
    assert [int(msg_id) for _, msg_id, _ in held] == [e["cursor"] for e in feed]
    assert [event for _, _, event in held] == feed
    assert {subject for subject, _, _ in held} == {f"lake.events.js.{t.id.split('.')[1]}" for t in tables}
    state = nats_state(api)
    assert state["cursor"] == feed[-1]["cursor"]
    assert state["delivered"] == len(feed)
    assert (state["kind"], state["failures"], state["lastError"]) == ("nats", 0, None)
    assert state["deadLetters"] == 0
    metrics = api.get("/metrics").text
    assert f'coordinator_publisher_delivered_total{{publisher="nats"}} {float(len(feed))}' in metrics


def test_commits_go_on_while_nats_is_down_and_the_lag_drains_after(
    api: TestClient, nats_server: NatsServer
) -> None:
    table = create_table(api, "js", f"down_{uuid.uuid4().hex[:6]}", FIELDS)
    commit(api, table, 0)
    wait_for(lambda: nats_state(api)["lagEvents"] == 0, "the publisher to catch up")

    nats_server.stop()
    started = time.monotonic()
    for i in range(1, 6):
        commit(api, table, i)  # each answered 201 with the broker gone
    assert time.monotonic() - started < 10
    lagging = wait_for(
        lambda: (s := nats_state(api))["lagEvents"] == 5 and s["failures"] and s, "the lag and a failure"
    )
    assert lagging["lastError"]
    assert isinstance(lagging["lagSeconds"], float)
    wait_for(
        lambda: 'coordinator_publisher_lag_events{publisher="nats"} 5.0' in api.get("/metrics").text,
        "the lag gauge",
    )

    nats_server.start()  # the same port and store
    drained = wait_for(lambda: (s := nats_state(api))["lagEvents"] == 0 and s, "the lag to drain", 60)
    assert drained["lastError"] is None
    assert drained["lagSeconds"] is None
    feed = api.get("/events", params={"limit": 1000}).json()["events"]
    held = stream_messages(nats_server.url, STREAM)
    assert [int(msg_id) for _, msg_id, _ in held] == [e["cursor"] for e in feed]
