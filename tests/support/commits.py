"""Commits and transactions as a writer sends them over HTTP: the request bodies, and the POSTs that must
succeed."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx

from tests.support.paimon_files import PaimonTable, Poster

if TYPE_CHECKING:
    from fastapi.testclient import TestClient

BATCH = 2**63 - 1
"""Paimon's batch commit identifier (BatchWriteBuilder.COMMIT_IDENTIFIER, Long.MAX_VALUE): it names no
commit, so two batch commits of one commit user are two commits."""


def commit_request(
    messages: list[dict[str, Any]], *, user: str | None = None, identifier: int = BATCH, **body: Any
) -> dict[str, Any]:
    """The CommitRequest JSON of `messages`: a fresh commitUser unless `user` is given, the batch
    identifier unless `identifier` is, and any other field of the request as it is."""
    return {
        "commitUser": user if user is not None else f"job-{uuid.uuid4()}",
        "identifier": identifier,
        "messages": messages,
        **body,
    }


def append_commit(table: PaimonTable, rows: Sequence[dict[str, Any]], **request: Any) -> dict[str, Any]:
    """The CommitRequest JSON adding one new data file of `rows` (one partition); `request` as for
    commit_request."""
    return commit_request([table.append_message(rows)], **request)


def post_commit(
    client: Poster, table: PaimonTable, request: dict[str, Any], *, headers: dict[str, str] | None = None
) -> httpx.Response:
    """POST `request` to the table's commits; the answer, whatever it is."""
    return client.post(f"/tables/{table.id}/commits", json=request, headers=headers or {})


def try_commit(
    client: Poster,
    table: PaimonTable,
    messages: list[dict[str, Any]],
    *,
    headers: dict[str, str] | None = None,
    **request: Any,
) -> httpx.Response:
    """POST a commit of `messages` (`request` as for commit_request); the answer, whatever it is."""
    return post_commit(client, table, commit_request(messages, **request), headers=headers)


def commit(
    client: Poster, table: PaimonTable, messages: list[dict[str, Any]], **request: Any
) -> list[dict[str, Any]]:
    """POST a commit of `messages` that must succeed (201); returns its snapshots."""
    response = try_commit(client, table, messages, **request)
    assert response.status_code == 201, response.text
    snapshots: list[dict[str, Any]] = response.json()["snapshots"]
    return snapshots


def history(client: httpx.Client, table_id: str, *, oldest_first: bool = False) -> list[dict[str, Any]]:
    """The table's commit history (up to 1,000 records), newest first unless `oldest_first`."""
    response = client.get(f"/tables/{table_id}/commits", params={"limit": 1000})
    assert response.status_code == 200, response.text
    records: list[dict[str, Any]] = response.json()["commits"]
    return sorted(records, key=lambda c: c["id"]) if oldest_first else records


def new_file(
    table: PaimonTable, rows: list[dict[str, Any]], written: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The messages adding one primary-key file of `rows` (written here, unless given)."""
    return [table.message(rows[0], newFiles=[written or table.pk_file(rows, first_sequence=0)])]


Changes = list[tuple[PaimonTable, list[dict[str, Any]]]]
"""What a transaction changes: each table with its commit messages."""


def transaction_body(changes: Changes, **body: Any) -> dict[str, Any]:
    """A TransactionRequest of `changes` (table, messages); `user` and `identifier` may be given."""
    return {
        "commitUser": body.pop("user", f"job-{uuid.uuid4()}"),
        "identifier": body.pop("identifier", 1),
        "tables": [{"table": t.id, "messages": m} for t, m in changes],
        **body,
    }


def transaction(api: TestClient, changes: Changes, **body: Any) -> Any:
    """POST /transactions; the answer, whatever it is."""
    return api.post("/transactions", json=transaction_body(changes, **body))
