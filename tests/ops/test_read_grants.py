"""Reads by grant (issue 29, item 4), the probe's findings replayed against a real server with tokens
required: a reader limited to a database or a table, and a writer (whose grant bounds its reads too),
see only their grant in every read, listing and ops view, natively and through Paimon's REST catalog;
the audit log and the metrics are not theirs to read; /health tells a caller without an admin token ok
or not per part, and nothing of paths, endpoints or exceptions."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pypaimon.catalog.catalog_exception import TableNoPermissionException

from coordinator.settings import Settings
from tests.support.commits import append_commit
from tests.support.paimon_files import PaimonTable, create_table
from tests.support.rest_writers import CATALOG_NAME, read_rows, rest_catalog
from tests.support.served import LiveServer
from tests.support.tokens import Authed, bearer

P = f"/v1/{CATALOG_NAME}"


class World:
    """Tables a.t, a.u, b.t with a commit each, a transaction over a.t and b.t, a conflict on b.t; and
    the tokens."""

    def __init__(self, server: LiveServer) -> None:
        store = server.services.tokens
        self.admin = store.create("ops", "admin").token
        self.reader = store.create("on-call", "reader").token
        self.reader_a = store.create("dash-a", "reader", database="a").token
        self.reader_at = store.create("dash-a-t", "reader", table="a.t").token
        self.writer_a = store.create("job-a", "writer", database="a").token
        self.http = httpx.Client(base_url=server.url, timeout=60)
        self.tables: dict[str, PaimonTable] = {}
        as_admin = Authed(self.http, self.admin)
        for table_id in ("a.t", "a.u", "b.t"):
            database, name = table_id.split(".")
            table = create_table(as_admin, database, name, {"id": "BIGINT"})
            self.tables[table_id] = table
            assert as_admin.post(f"/tables/{table_id}/commits", json=self.commit(table, "seed", 1)).is_success
        both = [
            {"table": t, "messages": self.commit(self.tables[t], "", 2)["messages"]} for t in ("a.t", "b.t")
        ]
        answer = as_admin.post("/transactions", json={"commitUser": "tx", "identifier": 5, "tables": both})
        assert answer.status_code == 201, answer.text
        # A writer whose base moved: a rejected commit (a conflict) on b.t only.
        stale = self.commit(self.tables["b.t"], "strict", 3) | {"baseSnapshotId": 1}
        assert as_admin.post("/tables/b.t/commits", json=stale).status_code == 409

    @staticmethod
    def commit(table: PaimonTable, user: str, row: int) -> dict[str, Any]:
        return append_commit(table, [{"id": row}], user=user)

    def get(self, path: str, token: str | None, **params: Any) -> httpx.Response:
        headers = {} if token is None else bearer(token)
        return self.http.get(path, headers=headers, params=params)

    def ok(self, path: str, token: str, **params: Any) -> Any:
        answer = self.get(path, token, **params)
        assert answer.status_code == 200, (path, answer.text)
        return answer.json()


@pytest.fixture
def world(secured: LiveServer) -> Iterator[tuple[LiveServer, World]]:
    built = World(secured)
    try:
        yield secured, built
    finally:
        built.http.close()


def test_tables_and_their_reads_stop_at_the_grant(world: tuple[LiveServer, World]) -> None:
    _, w = world

    def listed(token: str, **params: Any) -> list[str]:
        return [t["id"] for t in w.ok("/tables", token, **params)["tables"]]

    assert listed(w.admin) == listed(w.reader) == ["a.t", "a.u", "b.t"]
    assert listed(w.reader_a) == listed(w.writer_a) == ["a.t", "a.u"]
    assert listed(w.reader_at) == listed(w.reader_at, database="a") == ["a.t"]
    assert w.get("/tables", w.reader_a, database="b").status_code == 403
    for token in (w.reader_a, w.writer_a):
        for path in ("/tables/b.t", "/tables/b.t/snapshots", "/tables/b.t/files", "/tables/b.t/commits"):
            assert w.get(path, token).status_code == 403, path
        assert w.ok("/tables/a.u/snapshots/latest", token)["id"] == 1
    assert w.get("/tables/a.u", w.reader_at).status_code == 403
    assert w.ok("/tables/a.t/files", w.reader_at)["files"]
    # Decided on the name: a table that does not exist outside the grant is the same 403, so a
    # refusal tells nothing of what exists there.
    real, missing = w.get("/tables/b.t", w.reader_a).json(), w.get("/tables/b.zz", w.reader_a).json()
    assert (real["code"], missing["code"]) == ("FORBIDDEN", "FORBIDDEN")
    assert real["message"].replace("b.t", "b.zz") == missing["message"]
    assert w.get("/tables/a.zz", w.reader_a).status_code == 404  # inside the grant, the truth


def test_ops_views_show_a_limited_token_its_grant_only(world: tuple[LiveServer, World]) -> None:
    server, w = world
    everything = w.ok("/ops/overview", w.admin)
    assert everything["totals"]["tables"] == 3
    assert [c["tableId"] for c in everything["conflicts"]] == ["b.t"]
    assert everything["commitQueue"]["waiting"] == 0
    for token in (w.reader_a, w.writer_a):
        overview = w.ok("/ops/overview", token)
        assert overview["commitQueue"] is None  # the instance's queue is every table's
        assert overview["totals"]["tables"] == 2
        assert overview["totals"]["totalRecordCount"] == 3  # a.t's two rows and a.u's one
        assert [t["tableId"] for t in overview["tables"]] == ["a.t", "a.u"]
        assert overview["conflicts"] == []
        assert sum(m["committed"] + m["rejected"] for m in overview["commitsPerMinute"]) == 3
        assert sum(m["rejected"] for m in everything["commitsPerMinute"]) == 1
        assert w.get("/ops/overview", token, database="b").status_code == 403

        recent = w.ok("/commits", token)["recent"]
        assert {r["tableId"] for r in recent} == {"a.t", "a.u"}
        (tx,) = [r for r in recent if r["commitUser"] == "tx"]
        # The transaction's entry names only the tables the token may read.
        assert [t["table"] for t in tx["transaction"]] == ["a.t"]
        assert tx["details"]["transaction"] == ["a.t"]
        history = w.ok("/tables/a.t/commits", token)["commits"]
        assert [c["details"]["transaction"] for c in history if c["commitUser"] == "tx"] == [["a.t"]]
        assert w.get("/commits", token, table="b.t").status_code == 403
    (tx,) = [r for r in w.ok("/commits", w.admin)["recent"] if r["commitUser"] == "tx"]
    assert [t["table"] for t in tx["transaction"]] == ["a.t", "b.t"]
    history = w.ok("/tables/a.t/commits", w.admin)["commits"]
    assert [c["details"]["transaction"] for c in history if c["commitUser"] == "tx"] == [["a.t", "b.t"]]

    locks = server.services.locks
    leases = [locks.acquire(f"table:{t}", "probe", 5) for t in ("a.t", "b.t")]
    try:
        assert {x["lockId"] for x in w.ok("/locks", w.admin)["locks"]} == {"table:a.t", "table:b.t"}
        assert [x["lockId"] for x in w.ok("/locks", w.reader_a)["locks"]] == ["table:a.t"]
        assert [x["lockId"] for x in w.ok("/locks", w.reader_at)["locks"]] == ["table:a.t"]
    finally:
        for lease in leases:
            locks.release(lease)


def test_the_audit_log_and_the_metrics_are_not_for_limited_tokens(world: tuple[LiveServer, World]) -> None:
    _, w = world
    for token in (w.reader, w.reader_a, w.writer_a):
        assert w.get("/audit", token).status_code == 403
    assert "entries" in w.ok("/audit", w.admin)
    # Every series sums all tables: a token limited to a grant would learn of the others.
    for token in (w.reader_a, w.reader_at, w.writer_a):
        refused = w.get("/metrics", token)
        assert refused.status_code == 403
        assert "coordinator_commits_total" not in refused.text
    for token in (w.admin, w.reader):
        assert "coordinator_commits_total" in w.get("/metrics", token).text


def test_the_rest_catalog_lists_and_serves_only_the_grant(world: tuple[LiveServer, World]) -> None:
    server, w = world
    for token in (w.reader_a, w.reader_at, w.writer_a):
        assert w.ok(f"{P}/databases", token)["databases"] == ["a"]
        assert w.ok(f"{P}/databases", token, databaseNamePattern="b%")["databases"] == []
        for path in (
            f"{P}/databases/b",
            f"{P}/databases/b/tables",
            f"{P}/databases/b/tables/t",
            f"{P}/databases/b/tables/t/snapshot",
            f"{P}/databases/b/tables/t/snapshots",
            f"{P}/databases/b/tables/t/tags",
            f"{P}/databases/b/tables/t/token",
        ):
            refused = w.get(path, token)
            assert refused.status_code == 403, path
            assert refused.json()["code"] == 403
    assert w.ok(f"{P}/databases", w.reader)["databases"] == ["a", "b"]
    assert w.ok(f"{P}/databases/a/tables", w.reader_a)["tables"] == ["t", "u"]
    assert w.ok(f"{P}/databases/a/tables", w.reader_at)["tables"] == ["t"]
    assert w.get(f"{P}/databases/a/tables/u", w.reader_at).status_code == 403

    # pypaimon with a token limited to a.t reads it, and is refused b.t.
    catalog = rest_catalog(server.url, w.reader_at)
    assert sorted(r["id"] for r in read_rows(catalog.get_table("a.t"))) == [1, 2]
    assert catalog.list_tables("a") == ["t"]
    with pytest.raises(TableNoPermissionException):  # pypaimon's word for a 403
        catalog.get_table("b.t")


def test_health_says_ok_or_unavailable_to_all_and_why_to_admins(settings: Settings) -> None:
    # A warehouse whose store is not there: the check fails with the store's endpoint in its text. The
    # port stays bound (never listening) for the test, so no other process can start answering on it.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        store = (
            f"s3://AKPROBE:SKPROBE@probe-bucket/wh?endpoint_override=127.0.0.1:{port}&scheme=http&region=r1"
        )
        _health_without_the_store(
            settings.model_copy(update={"require_tokens": True, "warehouse": store}), port
        )


def _health_without_the_store(down: Settings, port: int) -> None:
    with LiveServer(down) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        admin = server.services.tokens.create("ops", "admin").token
        reader = server.services.tokens.create("on-call", "reader").token
        for headers in ({}, bearer(reader), {"Authorization": "Bearer pcc_x_y"}):
            health = http.get("/health", headers=headers)
            assert health.status_code == 503
            assert health.json() == {
                "status": "unavailable",
                "checks": {"database": "ok", "warehouse": "unavailable"},
            }
        detailed = http.get("/health", headers=bearer(admin))
        assert detailed.status_code == 503
        body = detailed.json()
        assert body["warehouse"] == "s3://probe-bucket/wh"
        assert f"127.0.0.1:{port}" in body["checks"]["warehouse"]
        assert "SKPROBE" not in detailed.text


def test_health_of_a_sound_service_without_a_token(world: tuple[LiveServer, World]) -> None:
    _, w = world
    health = w.get("/health", None)
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "checks": {"database": "ok", "warehouse": "ok"}}
    assert set(w.ok("/health", w.admin)) == {"status", "database", "warehouse", "checks"}
