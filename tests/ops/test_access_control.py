"""Access control: bearer tokens with roles (reader, writer, admin) and grants, on SQLite and PostgreSQL.

Every mutating route is taken from the app's OpenAPI document, so a route added later without a role
check fails here. Refused requests must change nothing: tables, history and storage are compared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from coordinator.access.tokens import TokenStore
from coordinator.app import create_app
from coordinator.cli import main as coordinator_main
from coordinator.settings import Settings
from coordinator_client import CoordinatorClient, Forbidden, Unauthorized
from tests.support.commits import append_commit, post_commit
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows
from tests.support.served import LiveServer, free_port, wait_healthy
from tests.support.tokens import Authed, bearer

MUTATING = {"POST", "PUT", "PATCH", "DELETE"}
SAMPLE_PATH = {
    "table_id": "a.t",
    "lock_id": "table:a.t",
    "name": "v1",
    "consumer_id": "c1",
    "commit_user": "u",
    "identifier": "1",
    "prefix": "paimon",
    "database": "a",
    "table": "t",
    "tag": "v1",
    "view": "v1",
    "letter_id": "1",
}


class Tokens:
    def __init__(self, store: TokenStore) -> None:
        self.admin = store.create("ops-admin", "admin").token
        self.reader = store.create("dash", "reader").token
        self.writer_a = store.create("job-a", "writer", database="a").token
        self.writer_a_t = store.create("job-a-t", "writer", table="a.t").token


@pytest.fixture
def secured(settings: Settings) -> Iterator[tuple[TestClient, Tokens]]:
    with TestClient(create_app(settings.model_copy(update={"require_tokens": True}))) as client:
        tokens = Tokens(client.app.state.services.tokens)
        yield client, tokens


def _mutating_routes(client: TestClient) -> list[tuple[str, str]]:
    """Every mutating operation the app publishes in its OpenAPI document."""
    paths = client.get("/openapi.json").json()["paths"]
    return [
        (method.upper(), path.format(**SAMPLE_PATH))
        for path, operations in paths.items()
        for method in operations
        if method.upper() in MUTATING
    ]


def _state(client: TestClient, admin: str, warehouse: Path) -> tuple[Any, ...]:
    """What a refused request must leave as it was: tables, their histories, locks, every file."""
    tables = client.get("/tables", headers=bearer(admin)).json()
    histories = [
        client.get(f"/tables/{t['id']}/commits", headers=bearer(admin)).json() for t in tables["tables"]
    ]
    files = sorted((str(p), p.stat().st_mtime_ns) for p in warehouse.rglob("*"))
    return tables, histories, client.get("/locks", headers=bearer(admin)).json()["locks"], files


def test_every_mutating_route_needs_a_token_and_a_role(
    secured: tuple[TestClient, Tokens], warehouse: Path
) -> None:
    client, tokens = secured
    table = create_table(Authed(client, tokens.admin), "a", "t", {"id": "BIGINT"})
    commit = client.post(
        f"/tables/{table.id}/commits",
        json=append_commit(table, [{"id": 1}], user="w"),
        headers=bearer(tokens.writer_a),
    )
    assert commit.status_code == 201, commit.text
    routes = _mutating_routes(client)
    # Every kind of change the API offers is here: tables, commits, maintenance, locks.
    assert len(routes) >= 12
    assert ("POST", "/locks/table:a.t/release") in routes
    assert ("POST", "/tables") in routes
    assert ("POST", "/v1/paimon/databases/a/tables/t/commit") in routes
    before = _state(client, tokens.admin, warehouse)
    for method, path in routes:
        # Paimon's REST catalog (/v1) answers in Paimon's error shape, whose code is the status.
        paimon = path.startswith("/v1/")
        anonymous = client.request(method, path, json={})
        assert anonymous.status_code == 401, (method, path, anonymous.text)
        assert anonymous.headers["www-authenticate"].startswith("Bearer")
        assert anonymous.json()["code"] == (401 if paimon else "UNAUTHENTICATED")
        forged = client.request(method, path, json={}, headers=bearer(tokens.reader + "x"))
        assert forged.status_code == 401, (method, path)
        reader = client.request(method, path, json={}, headers=bearer(tokens.reader))
        assert reader.status_code == 403, (method, path, reader.text)
        assert reader.json()["code"] == (403 if paimon else "FORBIDDEN")
    assert _state(client, tokens.admin, warehouse) == before


def test_a_writer_commits_only_inside_its_grant(secured: tuple[TestClient, Tokens], warehouse: Path) -> None:
    client, tokens = secured
    admin = Authed(client, tokens.admin)
    in_a = create_table(admin, "a", "t", {"id": "BIGINT"})
    other_in_a = create_table(admin, "a", "u", {"id": "BIGINT"})
    in_b = create_table(admin, "b", "t", {"id": "BIGINT"})

    def commit(table: PaimonTable, token: str, row: int) -> httpx.Response:
        body = append_commit(table, [{"id": row}], user=f"user-{row}")
        return post_commit(client, table, body, headers=bearer(token))

    assert commit(in_a, tokens.writer_a, 1).status_code == 201
    assert commit(other_in_a, tokens.writer_a, 2).status_code == 201
    refused = commit(in_b, tokens.writer_a, 3)
    assert refused.status_code == 403
    assert "may not write to b.t" in refused.json()["message"]
    assert commit(in_a, tokens.writer_a_t, 4).status_code == 201
    assert commit(other_in_a, tokens.writer_a_t, 5).status_code == 403
    assert commit(in_b, tokens.admin, 6).status_code == 201
    # Nothing of the refused commits is visible; the admitted ones are.
    assert pypaimon_rows(warehouse, in_b.id) == [{"id": 6}]
    assert pypaimon_rows(warehouse, in_a.id) == [{"id": 1}, {"id": 4}]
    assert pypaimon_rows(warehouse, other_in_a.id) == [{"id": 2}]
    # A writer may move its own consumer on a granted table, but not run other maintenance.
    consumer = client.put(
        f"/tables/{in_a.id}/consumers/stream", json={"nextSnapshotId": 1}, headers=bearer(tokens.writer_a)
    )
    assert consumer.status_code == 200, consumer.text
    assert client.post(f"/tables/{in_a.id}/expire", headers=bearer(tokens.writer_a)).status_code == 403
    assert client.post("/tables", json={}, headers=bearer(tokens.writer_a)).status_code == 403
    # A reader without a grant reads everything, the ops views and the metrics included, but the audit
    # log (it names tokens, roles and grants: admins only).
    for path in ("/tables", f"/tables/{in_b.id}/snapshots", "/locks", "/commits", "/metrics"):
        assert client.get(path, headers=bearer(tokens.reader)).status_code == 200, path
    assert client.get("/audit", headers=bearer(tokens.reader)).status_code == 403
    assert client.get("/audit", headers=bearer(tokens.admin)).status_code == 200
    assert client.get("/health").status_code == 200  # probes need no token


def test_ping_answers_204_to_whoever_may_commit_to_the_table(
    secured: tuple[TestClient, Tokens], settings: Settings
) -> None:
    """The benchmark's floor request takes a commit's way through the server, its checks included."""
    client, tokens = secured
    assert client.post("/tables/a.t/ping").status_code == 401
    assert client.post("/tables/a.t/ping", headers=bearer(tokens.reader)).status_code == 403
    assert client.post("/tables/b.t/ping", headers=bearer(tokens.writer_a)).status_code == 403
    for token in (tokens.writer_a, tokens.writer_a_t, tokens.admin):
        answer = client.post("/tables/a.t/ping", headers=bearer(token))  # no such table: not needed
        assert answer.status_code == 204
        assert answer.content == b""
    with TestClient(create_app(settings)) as open_client:
        assert open_client.post("/tables/a.t/ping").status_code == 204


def test_history_names_the_token_and_revoked_tokens_stop_working(secured: tuple[TestClient, Tokens]) -> None:
    client, tokens = secured
    table = create_table(Authed(client, tokens.admin), "a", "t", {"id": "BIGINT"})
    tag = client.post(f"/tables/{table.id}/tags", json={"name": "v1"}, headers=bearer(tokens.admin))
    assert tag.status_code == 404  # no snapshot to tag yet: refused after the role check passed
    client.post(
        f"/tables/{table.id}/commits",
        json=append_commit(table, [{"id": 1}], user="w"),
        headers=bearer(tokens.admin),
    )
    # The header that named the caller without access control is ignored once tokens are required.
    created = client.post(
        f"/tables/{table.id}/tags",
        json={"name": "v1"},
        headers={**bearer(tokens.admin), "X-Coordinator-User": "someone-else"},
    )
    assert created.status_code == 201, created.text
    history = client.get(f"/tables/{table.id}/commits", headers=bearer(tokens.reader)).json()["commits"]
    assert [(c["action"], c["commitUser"]) for c in history if c["action"] != "commit"] == [
        ("create-tag", "ops-admin")
    ]
    store: TokenStore = client.app.state.services.tokens  # type: ignore[attr-defined]
    reader_id = tokens.reader.split("_", 2)[1]
    assert store.revoke(reader_id) is True
    assert store.revoke(reader_id) is False
    assert client.get("/tables", headers=bearer(tokens.reader)).status_code == 401


def test_the_client_sends_its_token(settings: Settings) -> None:
    with LiveServer(settings.model_copy(update={"require_tokens": True})) as server:
        engine = create_engine(settings.database_url)
        reader = TokenStore(engine).create("dash", "reader").token
        engine.dispose()
        with CoordinatorClient(server.url) as anonymous, pytest.raises(Unauthorized):
            anonymous.list_tables()
        with CoordinatorClient(server.url, token=reader) as client:
            assert client.list_tables().tables == []
            with pytest.raises(Forbidden):
                client.create_table({"database": "a", "name": "t", "fields": [{"name": "id", "type": "INT"}]})
            assert client.list_tables().tables == []


def test_tokens_cli_stores_only_a_hash_and_audits(
    database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COORDINATOR_DATABASE_URL", database_url)
    assert coordinator_main(["tokens", "create", "--name", "etl", "--role", "writer", "--table", "a.t"]) == 0
    token = capsys.readouterr().out.strip()
    _, token_id, secret = token.split("_", 2)
    assert coordinator_main(["tokens", "create", "--name", "x", "--role", "writer"]) == 2
    assert "database" in capsys.readouterr().err
    assert coordinator_main(["tokens", "create", "--name", "x", "--role", "admin", "--database", "a"]) == 2
    assert "an admin token takes no grant" in capsys.readouterr().err
    # A reader may be limited to a database or a table, as a writer is.
    assert (
        coordinator_main(["tokens", "create", "--name", "dash-a", "--role", "reader", "--table", "a.u"]) == 0
    )
    reader_id = capsys.readouterr().out.strip().split("_", 2)[1]
    assert coordinator_main(["tokens", "list"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted((t["id"], t["role"], t["database"], t["table"], t["revokedAt"]) for t in listed) == sorted(
        [(token_id, "writer", "a", "t", None), (reader_id, "reader", "a", "u", None)]
    )
    engine = create_engine(database_url)
    with engine.connect() as conn:
        stored = [tuple(str(v) for v in row) for row in conn.execute(text("SELECT * FROM api_tokens"))]
    assert stored
    assert not any(secret in value for row in stored for value in row)
    assert TokenStore(engine).verify(token) is not None
    assert coordinator_main(["tokens", "revoke", token_id]) == 0
    assert coordinator_main(["tokens", "revoke", token_id]) == 1
    assert TokenStore(engine).verify(token) is None
    with engine.connect() as conn:
        audit = conn.execute(text("SELECT action, target FROM audit_log ORDER BY id")).all()
    engine.dispose()
    assert [tuple(a) for a in audit] == [
        ("create-token", token_id),
        ("create-token", reader_id),
        ("revoke-token", token_id),
    ]


def _serve(database_url: str, warehouse: Path, *flags: str) -> subprocess.Popen[str]:
    env = {**os.environ, "COORDINATOR_DATABASE_URL": database_url, "COORDINATOR_WAREHOUSE": str(warehouse)}
    return subprocess.Popen(
        [sys.executable, "-m", "coordinator.cli", "serve", *flags],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _first_json_line(process: subprocess.Popen[str], needle: str) -> dict[str, Any]:
    assert process.stderr is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        if needle in line:
            parsed: dict[str, Any] = json.loads(line)
            return parsed
    raise AssertionError(f"no log line with {needle!r}")


def test_open_bind_without_tokens_refuses_to_start(database_url: str, warehouse: Path) -> None:
    with _serve(database_url, warehouse, "--host", "0.0.0.0", "--port", str(free_port())) as refused:
        assert refused.wait(timeout=60) == 2
        line = _first_json_line_from_text(refused)
    assert line["level"] == "ERROR"
    assert "COORDINATOR_REQUIRE_TOKENS" in line["message"]

    port = free_port()
    with _serve(database_url, warehouse, "--port", str(port)) as loopback:
        try:
            warning = _first_json_line(loopback, "no access control")
            assert warning["level"] == "WARNING"
            wait_healthy(f"http://127.0.0.1:{port}")
        finally:
            loopback.terminate()

    port = free_port()
    flags = ("--host", "0.0.0.0", "--port", str(port), "--require-tokens")
    with _serve(database_url, warehouse, *flags) as protected:
        try:
            wait_healthy(f"http://127.0.0.1:{port}")
            assert httpx.get(f"http://127.0.0.1:{port}/tables").status_code == 401
        finally:
            protected.terminate()


def _first_json_line_from_text(process: subprocess.Popen[str]) -> dict[str, Any]:
    assert process.stderr is not None
    lines = [json.loads(line) for line in process.stderr.read().splitlines() if line.startswith("{")]
    assert lines, "the refusal was not logged"
    return lines[-1]  # type: ignore[no-any-return]


def test_a_transaction_needs_a_grant_on_every_table(
    secured: tuple[TestClient, Tokens], warehouse: Path
) -> None:
    client, tokens = secured
    admin = Authed(client, tokens.admin)
    in_a, in_b = (
        create_table(admin, "a", "t", {"id": "BIGINT"}),
        create_table(admin, "b", "t", {"id": "BIGINT"}),
    )

    def body(identifier: int) -> dict[str, Any]:
        changes = [
            {"table": t.id, "messages": append_commit(t, [{"id": identifier}], user="")["messages"]}
            for t in (in_a, in_b)
        ]
        return {"commitUser": "job", "identifier": identifier, "tables": changes}

    refused_body = body(1)  # its data files written first, as a job's are
    before = _state(client, tokens.admin, warehouse)
    refused = client.post("/transactions", json=refused_body, headers=bearer(tokens.writer_a))
    assert refused.status_code == 403
    assert refused.json()["field"] == "tables[1].table"
    assert "may not write to b.t" in refused.json()["message"]
    assert _state(client, tokens.admin, warehouse) == before
    assert client.post("/transactions", json=body(2), headers=bearer(tokens.admin)).status_code == 201
    assert pypaimon_rows(warehouse, in_a.id) == pypaimon_rows(warehouse, in_b.id) == [{"id": 2}]
