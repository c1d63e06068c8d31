"""Webhooks: every event POSTed to a real local HTTP server, signed with HMAC-SHA256; a failing receiver
gets the same event again after a backoff, and one that never answers 2xx lands it in the dead letters,
which the ops API lists, redelivers and drops."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi.testclient import TestClient

from coordinator.app import create_app
from coordinator.settings import Settings, WebhookTarget
from tests.support.commits import append_commit, post_commit
from tests.support.paimon_files import create_table
from tests.support.waiting import wait_for
from tests.support.webhook_receiver import WebhookReceiver

SECRET = "s3cret-of-the-hook"
FIELDS = {"dt": "STRING", "id": "BIGINT"}


@contextmanager
def served(settings: Settings, receiver: WebhookReceiver, max_attempts: int) -> Iterator[TestClient]:
    hooked = settings.model_copy(
        update={
            "events_webhooks": [WebhookTarget(name="audit", url=receiver.url, secret=SECRET)],
            "events_webhook_max_attempts": max_attempts,
            "events_publisher_backoff_seconds": 0.05,
            "events_publisher_max_backoff_seconds": 0.2,
            "events_poll_seconds": 0.05,
        }
    )
    with TestClient(create_app(hooked)) as api:
        yield api


def publisher(api: TestClient) -> dict[str, Any]:
    answer = api.get("/ops/publishers")
    assert answer.status_code == 200, answer.text
    (only,) = answer.json()["publishers"]
    return dict(only)


def test_a_receiver_failing_three_times_gets_the_event_on_the_fourth_signed(settings: Settings) -> None:
    with WebhookReceiver(failures=3) as receiver, served(settings, receiver, max_attempts=5) as api:
        table = create_table(api, "hooks", f"t_{uuid.uuid4().hex[:6]}", FIELDS, partitionKeys=["dt"])
        post_commit(api, table, append_commit(table, [{"dt": "a", "id": 1}])).raise_for_status()
        wait_for(lambda: len([d for d in receiver.deliveries if d.status == 204]) >= 2, "two deliveries")
        state = wait_for(lambda: (p := publisher(api))["lagEvents"] == 0 and p, "the lag to drain")

    first, second, third, fourth = receiver.deliveries[:4]
    assert [d.status for d in (first, second, third, fourth)] == [500, 500, 500, 204]
    # The same event each time, the created table's, and its body is the event as the feed has it.
    ids = {d.headers["X-Coordinator-Event-Id"] for d in (first, second, third, fourth)}
    assert len(ids) == 1
    event = json.loads(fourth.body)
    assert (str(event["cursor"]), event["kind"], event["tableId"]) == (ids.pop(), "table-create", table.id)
    expected = "sha256=" + hmac.new(SECRET.encode(), fourth.body, hashlib.sha256).hexdigest()
    assert fourth.headers["X-Coordinator-Signature"] == expected
    assert int(fourth.headers["X-Coordinator-Timestamp"]) > 0
    # Then the commit's event, once, after it.
    delivered = [json.loads(d.body) for d in receiver.deliveries if d.status == 204]
    assert [e["kind"] for e in delivered] == ["table-create", "commit"]
    assert state["kind"] == "webhook"
    assert state["name"] == "webhook-audit"
    assert state["target"] == receiver.url
    assert (state["delivered"], state["failures"], state["deadLetters"]) == (2, 3, 0)
    assert state["cursor"] == delivered[-1]["cursor"]
    assert state["lastError"] is None
    assert state["lagSeconds"] is None
    assert SECRET not in json.dumps(state)


def test_a_receiver_that_always_fails_lands_the_event_in_the_dead_letters(settings: Settings) -> None:
    with WebhookReceiver(failures=None) as receiver, served(settings, receiver, max_attempts=2) as api:
        table = create_table(api, "hooks", f"t_{uuid.uuid4().hex[:6]}", FIELDS, partitionKeys=["dt"])
        letters = wait_for(lambda: api.get("/ops/dead-letters").json()["deadLetters"], "a dead letter")
        letter = letters[0]
        assert letter["publisher"] == "webhook-audit"
        assert letter["attempts"] == 2
        assert letter["lastError"] == "DeliveryFailed: HTTP 500"
        assert letter["event"]["kind"] == "table-create"
        assert letter["event"]["tableId"] == table.id
        assert letter["eventId"] == letter["event"]["cursor"]
        state = publisher(api)
        assert state["deadLetters"] >= 1
        assert state["failures"] >= 2
        assert state["lastError"] == "DeliveryFailed: HTTP 500"

        # Still failing: a redelivery says why, and the letter stays with one more attempt.
        again = api.post(f"/ops/dead-letters/{letter['id']}/redeliver")
        assert again.json() == {"delivered": False, "error": "HTTP 500"}
        kept = {d["id"]: d for d in api.get("/ops/dead-letters").json()["deadLetters"]}
        assert kept[letter["id"]]["attempts"] == 3

        # The receiver recovered: the redelivery goes through and the letter is gone.
        receiver.failures = 0
        assert api.post(f"/ops/dead-letters/{letter['id']}/redeliver").json()["delivered"] is True
        redelivered = json.loads(receiver.deliveries[-1].body)
        assert redelivered["cursor"] == letter["eventId"]
        remaining = api.get("/ops/dead-letters", params={"publisher": "webhook-audit"}).json()["deadLetters"]
        assert letter["id"] not in {d["id"] for d in remaining}
        for other in remaining:
            assert api.delete(f"/ops/dead-letters/{other['id']}").status_code == 204

        unknown = api.post(f"/ops/dead-letters/{letter['id']}/redeliver")
        assert (unknown.status_code, unknown.json()["code"]) == (404, "DEAD_LETTER_NOT_FOUND")
        assert api.delete(f"/ops/dead-letters/{letter['id']}").status_code == 404
        bad = api.delete("/ops/dead-letters/zero")
        assert bad.status_code == 422
        assert "letter_id" in bad.text
        bad_filter = api.get("/ops/dead-letters", params={"publisher": "a b"})
        assert bad_filter.status_code == 422
        assert "publisher" in bad_filter.text
