"""A resend is the same changes, not the same name: nothing a writer sends is answered as a success and
dropped (issue 28).

Paimon's batch identifier (Long.MAX_VALUE) names no commit: two batch commits of one commit user are two
commits. Any other identifier names one commit: other changes under it are IDENTIFIER_REUSED, and an
Idempotency-Key sent again with another body is IDEMPOTENCY_KEY_REUSED. Every refused request leaves the
table's files, snapshots and history as they were.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pyarrow as pa
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator_client import CoordinatorClient
from coordinator_client.models import BATCH_IDENTIFIER
from tests.support.commits import BATCH, commit_request, post_commit
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows, sorted_rows, tree_digest
from tests.support.rest_writers import create_rest_table, read_rows, rest_catalog
from tests.support.served import LiveServer

STORES = ("local", "s3")
FIELDS = {"dt": "STRING", "id": "BIGINT", "v": "STRING"}


@pytest.fixture
def events(api: TestClient) -> PaimonTable:
    return create_table(api, "sales", "events", FIELDS, partitionKeys=["dt"])


def row(i: int) -> dict[str, Any]:
    return {"dt": "a", "id": i, "v": f"v{i}"}


def body(
    table: PaimonTable, ids: list[int], *, user: str = "writer", identifier: int = BATCH
) -> dict[str, Any]:
    """A commit of one new file holding rows `ids` (none: an empty commit)."""
    messages = [table.append_message([row(i) for i in ids])] if ids else []
    return commit_request(messages, user=user, identifier=identifier)


def state(api: TestClient, table: PaimonTable) -> tuple[Any, ...]:
    """Everything a refused request must leave as it was: files, snapshots, history."""
    return (
        tree_digest(table.location),
        api.get(f"/tables/{table.id}/snapshots").json(),
        api.get(f"/tables/{table.id}/commits").json(),
    )


def test_batch_commits_of_one_user_are_each_committed(
    api: TestClient, events: PaimonTable, warehouse_location: str
) -> None:
    """The default identifier is Paimon's batch identifier: a second commit of the same user with another
    file is a new commit, as in Paimon; the same body sent again is the same commit."""
    first = body(events, [1])
    assert post_commit(api, events, first).status_code == 201
    second = post_commit(api, events, body(events, [2]))
    assert second.status_code == 201, second.text
    assert second.json()["snapshots"] == [{"id": 2, "commitKind": "APPEND"}]
    resent = post_commit(api, events, first)
    assert resent.status_code == 200
    assert resent.json()["deduplicated"] is True
    assert resent.json()["snapshots"] == [{"id": 1, "commitKind": "APPEND"}]
    rows = pypaimon_rows(warehouse_location, events.id)
    assert sorted_rows(rows) == sorted_rows([row(1), row(2)])
    history = api.get(f"/tables/{events.id}/commits").json()["commits"]
    assert sorted((c["identifier"], c["snapshots"][0]["id"]) for c in history) == [
        (BATCH_IDENTIFIER, 1),
        (BATCH_IDENTIFIER, 2),
    ]


def test_other_changes_under_a_used_identifier_are_refused(api: TestClient, events: PaimonTable) -> None:
    assert post_commit(api, events, body(events, [1], identifier=5)).status_code == 201
    before = state(api, events)
    other = post_commit(api, events, body(events, [2], identifier=5))
    assert other.status_code == 409, other.text
    error = other.json()
    assert error["code"] == "IDENTIFIER_REUSED"
    assert error["conflict"]["type"] == "IDENTIFIER_REUSED"
    assert error["conflict"]["recorded"] == {
        "commitUser": "writer",
        "identifier": 5,
        "outcome": "committed",
        "snapshots": [{"id": 1, "commitKind": "APPEND"}],
    }
    # The refused file is the writer's to delete; nothing else changed.
    after = state(api, events)
    assert {k: v for k, v in after[0].items() if k in before[0]} == before[0]
    assert after[1:] == before[1:]
    assert api.get(f"/tables/{events.id}").json()["latestSnapshotId"] == 1


def test_an_empty_commit_is_recorded_and_its_identifier_is_not_a_trap(
    api: TestClient, events: PaimonTable, warehouse_location: str
) -> None:
    empty = body(events, [], identifier=1)
    answered = post_commit(api, events, empty)
    assert answered.status_code == 201
    assert answered.json()["snapshots"] == []
    assert post_commit(api, events, empty).json()["deduplicated"] is True
    # The real commit sent later under the empty one's identifier is refused, loudly, not dropped.
    before = state(api, events)
    late = post_commit(api, events, body(events, [1], identifier=1))
    assert late.status_code == 409
    assert late.json()["conflict"]["recorded"]["snapshots"] == []
    assert state(api, events)[1:] == before[1:]
    assert post_commit(api, events, body(events, [1], identifier=2)).status_code == 201
    assert sorted_rows(pypaimon_rows(warehouse_location, events.id)) == [row(1)]


def test_a_table_that_forces_snapshots_gets_one_for_an_empty_commit(api: TestClient) -> None:
    table = create_table(
        api, "sales", "ticks", FIELDS, partitionKeys=["dt"], options={"commit.force-create-snapshot": "true"}
    )
    answered = post_commit(api, table, {**body(table, [], identifier=3), "watermark": 1700000000000})
    assert answered.status_code == 201, answered.text
    assert answered.json()["snapshots"] == [{"id": 1, "commitKind": "APPEND"}]
    snapshot = api.get(f"/tables/{table.id}/snapshots/1").json()
    assert (snapshot["commitIdentifier"], snapshot["watermark"]) == (3, 1700000000000)


def test_an_idempotency_key_sent_again_with_another_body_is_refused(
    api: TestClient, events: PaimonTable
) -> None:
    first = body(events, [1])
    assert post_commit(api, events, first, headers={"Idempotency-Key": "k-1"}).status_code == 201
    assert post_commit(api, events, first, headers={"Idempotency-Key": "k-1"}).json()["deduplicated"] is True
    before = state(api, events)
    for other in (body(events, [2]), body(events, [2], user="someone-else")):
        refused = post_commit(api, events, other, headers={"Idempotency-Key": "k-1"})
        assert refused.status_code == 422, refused.text
        assert refused.json()["code"] == "IDEMPOTENCY_KEY_REUSED"
        assert refused.json()["field"] == "Idempotency-Key"
    after = state(api, events)
    assert after[1:] == before[1:]


def test_a_resend_is_answered_with_its_own_snapshots_among_many_batch_commits(
    api: TestClient, events: PaimonTable
) -> None:
    """The outcome of a keyed request is about that request, not the user's latest batch commit."""
    first = body(events, [1])
    assert post_commit(api, events, first, headers={"Idempotency-Key": "a"}).status_code == 201
    assert post_commit(api, events, body(events, [2]), headers={"Idempotency-Key": "b"}).status_code == 201
    outcome = api.get(
        f"/tables/{events.id}/commits/writer/{BATCH_IDENTIFIER}", params={"idempotencyKey": "a"}
    ).json()
    assert (outcome["status"], outcome["snapshots"]) == ("committed", [{"id": 1, "commitKind": "APPEND"}])
    unknown = api.get(
        f"/tables/{events.id}/commits/writer/{BATCH_IDENTIFIER}", params={"idempotencyKey": "never-sent"}
    ).json()
    assert unknown["status"] == "unknown"
    assert post_commit(api, events, first).json()["snapshots"] == [{"id": 1, "commitKind": "APPEND"}]


def test_ten_native_client_batch_commits_of_one_user(
    live_server: LiveServer, http: httpx.Client, warehouse_location: str
) -> None:
    table = create_table(http, "sales", "events", FIELDS, partitionKeys=["dt"])
    with CoordinatorClient(live_server.url) as client:
        for i in range(10):
            answered = client.commit(table.id, body(table, [i]))  # the batch identifier, one user
            assert [s.id for s in answered.snapshots] == [i + 1]
            assert not answered.deduplicated
    assert sorted_rows(pypaimon_rows(warehouse_location, table.id)) == sorted_rows(
        [row(i) for i in range(10)]
    )


def test_ten_pypaimon_batch_writes_through_one_write_builder(
    live_server: LiveServer, http: httpx.Client
) -> None:
    """pypaimon keeps one commit user per write builder and commits every batch under Paimon's batch
    identifier: each write is a commit of its own (19 of pypaimon's REST tests lost their second)."""
    catalog = rest_catalog(live_server.url)
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False), ("id", pa.int64()), ("v", pa.string())])
    table = create_rest_table(catalog, "db.events", schema, partition_keys=["dt"])
    builder = table.new_batch_write_builder()
    for i in range(10):
        write = builder.new_write()
        write.write_arrow(pa.Table.from_pylist([row(i)], schema=schema))
        commit = builder.new_commit()
        commit.commit(write.prepare_commit())
        commit.close()
        write.close()
    assert sorted_rows(read_rows(catalog.get_table("db.events"))) == sorted_rows([row(i) for i in range(10)])
    assert http.get("/tables/db.events").json()["latestSnapshotId"] == 10
    history = http.get("/tables/db.events/commits").json()["commits"]
    assert len({c["commitUser"] for c in history}) == 1
    assert sorted(c["snapshots"][0]["id"] for c in history if c["outcome"] == "committed") == list(
        range(1, 11)
    )


@pytest.mark.stores("local")
@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    identifier=st.sampled_from([BATCH_IDENTIFIER, 0, 7, -3]),
    keyed=st.booleans(),
    same=st.booleans(),
    other_user=st.booleans(),
)
def test_pairs_sharing_a_name_or_key_are_deduplicated_only_when_equal(
    api: TestClient, identifier: int, keyed: bool, same: bool, other_user: bool
) -> None:
    """Two requests under one commitUser + identifier (or one Idempotency-Key): equal bodies are one
    commit; different ones are two commits for the batch identifier and refused for any other; a request
    is never answered as a success without its file being live."""
    table = create_table(api, "pairs", f"t{uuid.uuid4().hex[:12]}", FIELDS, partitionKeys=["dt"])
    headers = {"Idempotency-Key": str(uuid.uuid4())} if keyed else {}
    first = body(table, [1], identifier=identifier)
    second = (
        first
        if same
        else body(table, [2], identifier=identifier, user="other" if other_user and keyed else "writer")
    )
    answers = [
        post_commit(api, table, first, headers=headers),
        post_commit(api, table, second, headers=headers),
    ]
    assert answers[0].status_code == 201, answers[0].text
    second_answer = answers[1]
    if same:
        assert second_answer.status_code == 200, second_answer.text
        assert second_answer.json() | {"timings": {}} == {
            **answers[0].json(),
            "deduplicated": True,
            "timings": {},
            "groupSize": 1,
        }
    elif keyed:
        assert (second_answer.status_code, second_answer.json()["code"]) == (422, "IDEMPOTENCY_KEY_REUSED")
    elif identifier == BATCH_IDENTIFIER:
        assert second_answer.status_code == 201, second_answer.text
        assert second_answer.json()["snapshots"] == [{"id": 2, "commitKind": "APPEND"}]
    else:
        assert (second_answer.status_code, second_answer.json()["code"]) == (409, "IDENTIFIER_REUSED")
    live = {f["fileName"] for f in api.get(f"/tables/{table.id}/files").json()["files"]}
    for request, answer in zip((first, second), answers, strict=True):
        named = {f["fileName"] for m in request["messages"] for f in m["newFiles"]}
        assert (named <= live) == (answer.status_code in (200, 201)), (answer.status_code, answer.text)


def test_a_streaming_checkpoint_resent_through_the_rest_catalog_is_one_commit(
    live_server: LiveServer, http: httpx.Client
) -> None:
    """A streaming writer names each commit (Flink: the checkpoint id). The same messages committed again
    under that name, with manifests written anew under new names, are a resend; other messages under it
    are refused, and the table stays as it was."""
    catalog = rest_catalog(live_server.url)
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False), ("id", pa.int64()), ("v", pa.string())])
    # Paimon retries a failed commit up to commit.max-retries times; a refusal is final, so once is enough.
    options = {"commit.max-retries": "1"}
    table = create_rest_table(catalog, "db.stream", schema, partition_keys=["dt"], options=options)
    builder = table.new_stream_write_builder()

    def messages(i: int) -> Any:
        write = builder.new_write()
        write.write_arrow(pa.Table.from_pylist([row(i)], schema=schema))
        prepared = write.prepare_commit(i)
        write.close()
        return prepared

    commit = builder.new_commit()
    checkpoint = messages(1)
    commit.commit(checkpoint, 1)
    commit.commit(checkpoint, 1)  # resent after a crash: new manifests, the same entries
    assert http.get("/tables/db.stream").json()["latestSnapshotId"] == 1
    before = http.get("/tables/db.stream/commits").json()
    with pytest.raises(Exception) as refused:  # noqa: PT011 (pypaimon wraps the answer in its own errors)
        commit.commit(messages(2), 1)
    chain: list[BaseException] = [refused.value]
    while chain[-1].__cause__ is not None:
        chain.append(chain[-1].__cause__)
    assert any("an identifier names one commit" in str(e) for e in chain), chain
    assert http.get("/tables/db.stream").json()["latestSnapshotId"] == 1
    assert http.get("/tables/db.stream/commits").json() == before
    commit.commit(messages(3), 2)
    commit.close()
    assert sorted_rows(read_rows(catalog.get_table("db.stream"))) == sorted_rows([row(1), row(3)])
