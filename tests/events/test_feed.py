"""GET /events on SQLite and PostgreSQL: what each change writes into the outbox, and how the feed reads.

Every change below goes through the real routes; the events are read back through the real routes too.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from coordinator.services import Services
from tests.support.commits import append_commit, post_commit, transaction
from tests.support.paimon_files import PaimonTable, create_table

FIELDS = {"dt": "STRING", "id": "BIGINT"}


def events(api: TestClient, **params: Any) -> list[dict[str, Any]]:
    answer = api.get("/events", params={"limit": 1000, **params})
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["events"]
    return found


def a_table(api: TestClient, database: str = "ev") -> PaimonTable:
    return create_table(api, database, f"t_{uuid.uuid4().hex[:6]}", FIELDS, partitionKeys=["dt"])


def test_a_commit_writes_one_event_with_its_snapshots_and_partitions(api: TestClient) -> None:
    table = a_table(api)
    rows = [{"dt": "2024-01-01", "id": 1}, {"dt": "2024-01-01", "id": 2}]
    answer = post_commit(api, table, append_commit(table, rows, user="job", identifier=7))
    assert answer.status_code == 201, answer.text

    created, committed = events(api, table=table.id)
    assert created["kind"] == "table-create"
    assert committed["kind"] == "commit"
    assert committed["cursor"] > created["cursor"]
    assert (committed["commitUser"], committed["commitIdentifier"]) == ("job", 7)
    assert committed["snapshotIds"] == [s["id"] for s in answer.json()["snapshots"]]
    assert committed["partitions"] == [
        {
            "partition": {"dt": "2024-01-01"},
            "addedFiles": 1,
            "removedFiles": 0,
            "addedRows": 2,
            "removedRows": 0,
        }
    ]
    assert committed["details"]["commitKinds"] == ["APPEND"]


def test_a_rejected_or_refused_commit_writes_no_event(api: TestClient) -> None:
    table = a_table(api)
    first = append_commit(table, [{"dt": "a", "id": 1}], user="job", identifier=1)
    assert post_commit(api, table, first).status_code == 201
    before = events(api, table=table.id)

    # The same name with other changes (409), and a file that is not on storage (422).
    other = append_commit(table, [{"dt": "b", "id": 2}], user="job", identifier=1)
    assert post_commit(api, table, other).status_code == 409
    missing = append_commit(table, [{"dt": "c", "id": 3}], user="job", identifier=2)
    missing["messages"][0]["newFiles"][0]["fileName"] = "data-nowhere.parquet"
    assert post_commit(api, table, missing).status_code == 422
    # A resend of the first is answered from its record: no second event either.
    assert post_commit(api, table, first).status_code in (200, 201)

    assert events(api, table=table.id) == before


def test_a_transaction_writes_one_event_per_table_in_one_commit(api: TestClient) -> None:
    a, b = a_table(api), a_table(api)
    changes = [(t, [t.append_message([{"dt": "x", "id": 1}])]) for t in (a, b)]
    answer = transaction(api, changes, user="tx", identifier=3)
    assert answer.status_code == 201, answer.text

    found = [e for e in events(api, kind="transaction") if e["tableId"] in (a.id, b.id)]
    assert sorted(e["tableId"] for e in found) == sorted([a.id, b.id])
    assert all(sorted(e["details"]["transaction"]) == sorted([a.id, b.id]) for e in found), found
    assert all((e["commitUser"], e["commitIdentifier"]) == ("tx", 3) for e in found)


def test_maintenance_and_drop_write_their_events(api: TestClient) -> None:
    table = a_table(api)
    for i in range(1, 4):
        body = append_commit(table, [{"dt": "d", "id": i}], user="job", identifier=i)
        assert post_commit(api, table, body).status_code == 201
    assert api.post(f"/tables/{table.id}/tags", json={"name": "t1", "snapshotId": 2}).status_code == 201
    assert api.delete(f"/tables/{table.id}/tags/t1").status_code == 200
    assert api.post(f"/tables/{table.id}/rollback", json={"snapshotId": 2}).status_code == 200
    options = {"set": {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}}
    assert api.patch(f"/tables/{table.id}/options", json=options).status_code == 200
    assert api.post(f"/tables/{table.id}/expire", json={}).status_code == 200
    # Consumers change no snapshot: no event.
    assert api.put(f"/tables/{table.id}/consumers/c1", json={"nextSnapshotId": 2}).status_code == 200
    assert api.delete(f"/tables/{table.id}").status_code == 204

    found = events(api, table=table.id)
    kinds = [e["kind"] for e in found]
    assert kinds == [
        "table-create",
        "commit",
        "commit",
        "commit",
        "tag-create",
        "tag-delete",
        "rollback",
        "schema-change",
        "expire",
        "table-drop",
    ]
    by_kind = {e["kind"]: e for e in found}
    assert by_kind["tag-create"]["snapshotIds"] == [2]
    assert by_kind["rollback"]["snapshotIds"] == [2]
    assert by_kind["expire"]["snapshotIds"] == [1]
    cursors = [e["cursor"] for e in found]
    assert cursors == sorted(cursors)


def test_after_resumes_and_filters_narrow(api: TestClient) -> None:
    a, b = a_table(api, "ev_a"), a_table(api, "ev_b")
    for i in range(3):
        for t in (a, b):
            assert post_commit(api, t, append_commit(t, [{"dt": "p", "id": i}])).status_code == 201
    everything = events(api)
    middle = everything[len(everything) // 2]["cursor"]
    assert events(api, after=middle) == [e for e in everything if e["cursor"] > middle]
    assert {e["tableId"] for e in events(api, database="ev_a")} == {a.id}
    page = api.get("/events", params={"limit": 2, "table": b.id}).json()
    assert [e["tableId"] for e in page["events"]] == [b.id, b.id]
    assert page["nextCursor"] == page["events"][-1]["cursor"]
    empty = api.get("/events", params={"after": everything[-1]["cursor"]}).json()
    assert empty == {"events": [], "nextCursor": everything[-1]["cursor"]}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"after": "abc"}, "after"),
        ({"after": "-1"}, "after"),
        ({"after": "1.5"}, "after"),
        ({"after": str(2**64)}, "after"),
        ({"wait": "-1"}, "wait"),
        ({"wait": "61"}, "wait"),
        ({"wait": "soon"}, "wait"),
        ({"kind": "nothing"}, "kind"),
        ({"limit": "0"}, "limit"),
    ],
)
def test_bad_input_is_a_422_naming_the_parameter(api: TestClient, params: dict[str, str], field: str) -> None:
    for path in ("/events", "/events/stream"):
        if path.endswith("stream") and field in ("wait", "limit"):
            continue
        answer = api.get(path, params=params)
        assert answer.status_code == 422, answer.text
        assert answer.json()["field"] == field, answer.json()


def test_a_malformed_last_event_id_is_a_422(api: TestClient) -> None:
    answer = api.get("/events/stream", headers={"Last-Event-ID": "x"})
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == "Last-Event-ID"


def test_a_cursor_older_than_the_retention_is_410_naming_the_oldest_kept(api: TestClient) -> None:
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    old = a_table(api)
    gone = events(api)[-1]["cursor"]
    services.events.retention_seconds = 0.0
    assert services.events.prune() >= 1
    services.events.retention_seconds = 3600.0
    kept = a_table(api)

    answer = api.get("/events", params={"after": 0})
    assert answer.status_code == 410, answer.text
    body = answer.json()
    assert body["code"] == "CURSOR_EXPIRED"
    assert body["field"] == "after"
    (created,) = events(api, table=kept.id)
    assert body["oldestCursor"] == created["cursor"]
    # At the last cursor retention deleted nothing is missing; without a cursor the feed starts at the
    # oldest kept.
    assert [e["tableId"] for e in events(api, after=gone)] == [kept.id]
    assert [e["tableId"] for e in events(api)] == [kept.id]
    assert old.id not in {e["tableId"] for e in events(api)}


def test_a_long_poll_answers_as_soon_as_an_event_exists(api: TestClient) -> None:
    table = a_table(api)
    last = events(api)[-1]["cursor"]

    def commit_later() -> None:
        time.sleep(0.5)
        post_commit(api, table, append_commit(table, [{"dt": "late", "id": 1}]))

    writer = threading.Thread(target=commit_later)
    started = time.monotonic()
    writer.start()
    answer = api.get("/events", params={"after": last, "wait": 30})
    took = time.monotonic() - started
    writer.join()
    assert answer.status_code == 200
    assert [e["kind"] for e in answer.json()["events"]] == ["commit"]
    assert 0.4 < took < 10, took

    started = time.monotonic()
    quiet = api.get("/events", params={"after": answer.json()["nextCursor"], "wait": 0.3})
    assert quiet.json()["events"] == []
    assert time.monotonic() - started >= 0.3


def test_refused_maintenance_and_table_requests_write_no_event(api: TestClient) -> None:
    table = a_table(api)
    assert post_commit(api, table, append_commit(table, [{"dt": "a", "id": 1}])).status_code == 201
    before = events(api)
    database, name = table.id.split(".")
    drop_x = {"changes": [{"action": "dropColumn", "fieldName": "x"}]}
    again = {"database": database, "name": name, "fields": [{"name": "a", "type": "INT"}]}
    refused = [
        api.post(f"/tables/{table.id}/tags", json={"name": "t", "snapshotId": 99}),
        api.delete(f"/tables/{table.id}/tags/none"),
        api.post(f"/tables/{table.id}/rollback", json={"snapshotId": 99}),
        api.post(f"/tables/{table.id}/schema", json=drop_x),
        api.patch(f"/tables/{table.id}/options", json={"set": {"bucket": "4"}}),
        api.post("/tables", json=again),
        api.delete("/tables/ev.nothing_here"),
    ]
    assert [r.status_code for r in refused] == [404, 404, 404, 422, 422, 409, 404], [r.text for r in refused]
    assert events(api) == before
