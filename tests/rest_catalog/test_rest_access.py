"""Access control through Paimon's REST catalog, with `require_tokens` on: the native API's tokens,
roles and grants. Readers read; admins create, alter and drop; commits and rollbacks need a writer whose grant
covers the table. Refusals are Paimon's ErrorResponse and change nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pyarrow as pa
import pytest

from tests.support.paimon_files import tree_digest
from tests.support.rest_writers import CATALOG_NAME, create_rest_table, read_rows, rest_catalog, write_rows
from tests.support.served import LiveServer
from tests.support.tokens import bearer

SCHEMA = pa.schema([("id", pa.int64())])
P = f"/v1/{CATALOG_NAME}"


class Tokens:
    def __init__(self, server: LiveServer) -> None:
        store = server.services.tokens
        self.admin = store.create("ops", "admin").token
        self.reader = store.create("dashboard", "reader").token
        self.writer_a = store.create("job-a", "writer", database="a").token


@pytest.fixture
def secured(secured: LiveServer) -> tuple[LiveServer, Tokens]:
    """The secured server, with this module's tokens."""
    return secured, Tokens(secured)


def rows(*ids: int) -> pa.Table:
    return pa.Table.from_pylist([{"id": i} for i in ids], schema=SCHEMA)


def test_roles_and_grants_through_the_rest_catalog(secured: tuple[LiveServer, Tokens]) -> None:
    server, tokens = secured
    admin = rest_catalog(server.url, tokens.admin)
    for database in ("a", "b"):
        create_rest_table(admin, f"{database}.t", SCHEMA)
    # A writer granted database a commits there through pypaimon; a reader reads it.
    write_rows(rest_catalog(server.url, tokens.writer_a).get_table("a.t"), rows(1, 2))
    assert read_rows(rest_catalog(server.url, tokens.reader).get_table("a.t")) == [{"id": 1}, {"id": 2}]

    with httpx.Client(base_url=server.url, timeout=60) as http:
        head = http.get(f"{P}/databases/a/tables/t/snapshot", headers=bearer(tokens.reader)).json()[
            "snapshot"
        ]
        table_b = http.get(f"{P}/databases/b/tables/t", headers=bearer(tokens.reader)).json()
        proposal = {
            "tableId": table_b["id"],
            "baseSnapshotUuid": None,
            "snapshot": head["snapshot"],
            "statistics": [],
        }
        refused: list[tuple[str, str, str, Any]] = [
            ("writer of a", "POST", f"{P}/databases/b/tables/t/commit", tokens.writer_a),
            ("reader", "POST", f"{P}/databases/a/tables/t/commit", tokens.reader),
            ("writer of a", "POST", f"{P}/databases/b/tables/t/rollback", tokens.writer_a),
            ("reader", "POST", f"{P}/databases/a/tables/t/rollback", tokens.reader),
            ("reader", "POST", f"{P}/databases", tokens.reader),
            ("reader", "POST", f"{P}/databases/a/tables/t", tokens.reader),
            ("writer of a", "POST", f"{P}/databases/a/tables/t", tokens.writer_a),
            ("writer of a", "POST", f"{P}/databases/a/tables", tokens.writer_a),
            ("writer of a", "DELETE", f"{P}/databases/a/tables/t", tokens.writer_a),
            ("reader", "DELETE", f"{P}/databases/b", tokens.reader),
        ]
        before = _state(http, tokens.admin, server)
        for who, method, path, token in refused:
            body = (
                {"instant": {"type": "snapshot", "snapshotId": 1}} if path.endswith("rollback") else proposal
            )
            answer = http.request(method, path, json=body, headers=bearer(token))
            assert answer.status_code == 403, (who, method, path, answer.text)
            assert answer.json()["code"] == 403
        for path in ("/v1/config", f"{P}/databases", f"{P}/databases/a/tables/t/snapshot"):
            anonymous = http.get(path, params={"warehouse": CATALOG_NAME})
            assert anonymous.status_code == 401
            assert anonymous.json()["code"] == 401
            assert http.get(path, headers=bearer(tokens.reader + "x")).status_code == 401
        assert _state(http, tokens.admin, server) == before


def _state(http: httpx.Client, admin: str, server: LiveServer) -> tuple[Any, ...]:
    tables = http.get("/tables", headers=bearer(admin)).json()["tables"]
    histories = [http.get(f"/tables/{t['id']}/commits", headers=bearer(admin)).json() for t in tables]
    files = {t["id"]: tree_digest(t["location"]) for t in tables}
    databases = http.get(f"{P}/databases", headers=bearer(admin)).json()
    return tables, histories, files, databases
