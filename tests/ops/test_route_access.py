"""Who may call what (issue 29, item 5): every route of the app, with each kind of token, against a real
server with tokens required, checked against the table of routes x roles in docs/operations.md, parsed from
that document itself, so the document and the behaviour cannot drift.

The answer checked is the class: 401, 403, or allowed (anything else: a valid request may still be a
404, 409, 422 or 501 of its own). Every refused request is sent before any allowed one, and the
warehouse's files, the tables, their histories, the databases, the locks and the audit log are compared
around them: a refusal changes nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
from fastapi.routing import iter_route_contexts

from tests.support import REPO
from tests.support.commits import commit
from tests.support.paimon_files import create_table, pypaimon_rows, tree_digest
from tests.support.rest_writers import CATALOG_NAME
from tests.support.served import LiveServer
from tests.support.tokens import bearer

ACCESS_DOC = REPO / "docs" / "operations.md"
MARKER = "<!-- route-access-table -->"
ROLES = (
    "admin",
    "writer, grant covers",
    "writer, grant elsewhere",
    "reader, no grant",
    "reader, grant covers",
    "reader, grant elsewhere",
    "no token",
)
SAMPLE_PATH = {
    "table_id": "a.t",
    "prefix": CATALOG_NAME,
    "database": "a",
    "table": "t",
    "lock_id": "table:a.t",
    "commit_user": "u",
    "identifier": "1",
    "consumer_id": "c1",
    "letter_id": "1",
    "snapshot_id": "1",
    "version": "LATEST",
    "name": "v1",
    "tag": "v1",
    "view": "v1",
    "rest": f"{CATALOG_NAME}/databases/a/functions",
}
"""Every path parameter, pointing at table a.t (database a), which the granted tokens cover."""
BODIES: dict[tuple[str, str], Any] = {
    # The grant check needs the tables named in the body: a transaction on a.t alone.
    ("POST", "/transactions"): {"commitUser": "walk", "identifier": 7, "tables": [{"table": "a.t"}]},
}
BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
ENDLESS = {("GET", "/events/stream")}
"""Server-sent events: an allowed call's answer never ends, so only its status is read."""


def documented_table() -> dict[tuple[str, str], dict[str, str]]:
    """(method, path) -> role -> the document's cell, from the table after MARKER."""
    text = ACCESS_DOC.read_text()
    assert MARKER in text, "docs/operations.md lost its route table"
    lines = text.split(MARKER, 1)[1].strip().splitlines()
    table = []
    for line in lines:
        if not line.startswith("|"):
            break
        table.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    header, rule, *rows = table
    assert tuple(header) == ("route", *ROLES)
    assert set("".join(rule)) <= {"-", ":"}
    expected: dict[tuple[str, str], dict[str, str]] = {}
    for route, *cells in rows:
        method, path = route.strip("`").split(" ", 1)
        assert (method, path) not in expected, f"{route} twice"
        assert len(cells) == len(ROLES), route
        expected[(method, path)] = dict(zip(ROLES, cells, strict=True))
    return expected


def answer_class(cell: str) -> str:
    """401, 403, or allowed: what a cell of the table promises."""
    match = re.match(r"(401|403)\b", cell)
    return match.group(1) if match else "allowed"


def app_routes(server: LiveServer, http: httpx.Client) -> set[tuple[str, str]]:
    """Every operation of the app's OpenAPI document, and every route left out of it (the docs, the
    dashboard's page, /v1's fallback as ANY): what the documented table must list, no more, no less."""
    paths = http.get("/openapi.json").json()["paths"]
    routes = {(method.upper(), path) for path, operations in paths.items() for method in operations}
    # FastAPI includes routers lazily (app.routes holds the included routers, not their routes);
    # iter_route_contexts lists every route with its full path.
    for route in iter_route_contexts(server.app.routes):
        if getattr(route, "include_in_schema", True):
            continue
        methods = set(route.methods or ()) - {"HEAD"}
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path or "")
        routes.add(("ANY" if len(methods) > 1 else methods.pop(), path))
    return routes


class Walk:
    """The tokens of each role, made on the server's own token store."""

    def __init__(self, server: LiveServer) -> None:
        store = server.services.tokens
        self.tokens: dict[str, str | None] = {
            "admin": store.create("ops", "admin").token,
            "writer, grant covers": store.create("job-a", "writer", database="a").token,
            "writer, grant elsewhere": store.create("job-b", "writer", database="b").token,
            "reader, no grant": store.create("on-call", "reader").token,
            "reader, grant covers": store.create("dash-a", "reader", database="a").token,
            "reader, grant elsewhere": store.create("dash-b", "reader", database="b").token,
            "no token": None,
        }

    def send(self, http: httpx.Client, method: str, path: str, role: str) -> httpx.Response:
        token = self.tokens[role]
        headers = {} if token is None else bearer(token)
        url = path.format(**SAMPLE_PATH)
        if method == "ANY":
            method = "GET"
        if method in BODY_METHODS:
            body = BODIES.get((method, path), {})
            return http.request(method, url, json=body, headers=headers)
        if (method, path) in ENDLESS:
            with http.stream(method, url, headers=headers) as answer:
                if answer.is_error:
                    answer.read()
            return answer
        return http.request(method, url, headers=headers)


def _state(http: httpx.Client, admin: str, warehouse: Path) -> tuple[Any, ...]:
    """What a refused request must leave as it was."""
    auth = bearer(admin)
    tables = http.get("/tables", headers=auth).json()["tables"]
    histories = [http.get(f"/tables/{t['id']}/commits", headers=auth).json() for t in tables]
    databases = http.get(f"/v1/{CATALOG_NAME}/databases", headers=auth).json()
    locks = http.get("/locks", headers=auth).json()["locks"]
    audit = http.get("/audit", headers=auth).json()["entries"]
    rows = [pypaimon_rows(warehouse, t["id"]) for t in tables]
    return tables, histories, databases, locks, audit, rows, tree_digest(warehouse)


def test_every_route_answers_every_role_as_the_docs_say(secured: LiveServer, warehouse: Path) -> None:
    expected = documented_table()
    walk = Walk(secured)
    admin = walk.tokens["admin"]
    assert admin is not None
    with httpx.Client(base_url=secured.url, timeout=60, headers={}) as http:
        assert set(expected) == app_routes(secured, http), (
            "docs/operations.md's route table and the app differ"
        )
        # Table a.t with a snapshot, so every read has something to show; b.t beside it.
        authed = httpx.Client(base_url=secured.url, timeout=60, headers=bearer(admin))
        with authed:
            table = create_table(authed, "a", "t", {"id": "BIGINT"})
            create_table(authed, "b", "t", {"id": "BIGINT"})
            commit(authed, table, [table.append_message([{"id": 1}])], user="seed")
        refused = [
            (r, role)
            for r, cells in expected.items()
            for role in ROLES
            if answer_class(cells[role]) != "allowed"
        ]
        allowed = [
            (r, role)
            for r, cells in expected.items()
            for role in ROLES
            if answer_class(cells[role]) == "allowed"
        ]
        # Every role but the admin is refused somewhere, and every role allowed somewhere.
        assert {role for _, role in refused} == set(ROLES) - {"admin"}
        assert {role for _, role in allowed} == set(ROLES)

        before = _state(http, admin, warehouse)
        wrong: list[tuple[str, str, str, int | str, int, str]] = []
        for (method, path), role in refused:
            answer = walk.send(http, method, path, role)
            want = int(answer_class(expected[(method, path)][role]))
            if answer.status_code != want:
                wrong.append((method, path, role, want, answer.status_code, answer.text[:200]))
                continue
            # Each API answers in its own error shape; /v1's code is the status.
            code = answer.json()["code"]
            assert code == want if path.startswith("/v1/") else code in ("UNAUTHENTICATED", "FORBIDDEN")
        assert _state(http, admin, warehouse) == before, "a refused request changed something"

        # Allowed ones after, the admin's last: they may change the table (even drop it).
        for (method, path), role in sorted(allowed, key=lambda a: a[1] == "admin"):
            answer = walk.send(http, method, path, role)
            if answer.status_code in (401, 403):
                wrong.append((method, path, role, "allowed", answer.status_code, answer.text[:200]))
    assert wrong == []
    assert len(refused) + len(allowed) == len(expected) * len(ROLES)
