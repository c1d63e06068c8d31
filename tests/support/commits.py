"""Commits and transactions as a writer sends them over HTTP: the request bodies, and the POSTs that must
succeed."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from tests.support.paimon_files import PaimonTable

if TYPE_CHECKING:
    from fastapi.testclient import TestClient

BATCH = 2**63 - 1
"""Paimon's batch commit identifier (BatchWriteBuilder.COMMIT_IDENTIFIER, Long.MAX_VALUE): it names no
commit, so two batch commits of one commit user are two commits."""


def commit(
    api: TestClient, table: PaimonTable, messages: list[dict[str, Any]], **body: Any
) -> list[dict[str, Any]]:
    """POST a batch commit of `messages` that must succeed; returns its snapshots."""
    response = api.post(
        f"/tables/{table.id}/commits",
        json={
            "commitUser": f"job-{uuid.uuid4()}",
            "identifier": body.pop("identifier", BATCH),
            "messages": messages,
            **body,
        },
    )
    assert response.status_code == 201, response.text
    snapshots: list[dict[str, Any]] = response.json()["snapshots"]
    return snapshots


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
