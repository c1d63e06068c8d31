"""Every path and query parameter of every GET route is bounded: an integer outside 64 bits or a negative
one, a string holding a control character or longer than any bound, answers 422 naming the parameter,
never a 500 from the database refusing it, and changes nothing in the database or on storage.

The routes and their parameters are read from the app itself, so a new route or parameter is covered
without touching this file; a parameter of a type no bad values are known for fails the test.
"""

from __future__ import annotations

import string
import types
from collections.abc import Iterator
from typing import Any, Literal, Union, get_args, get_origin
from urllib.parse import quote

import pytest
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.app import create_app
from coordinator.settings import Settings
from tests.support.commits import commit
from tests.support.databases import database_digest
from tests.support.paimon_files import PaimonTable, pk_table, rows_in_bucket, tree_digest

INT64_MAX = 2**63 - 1
SIGNED = {"identifier"}
"""Integers whose negative values are valid: Paimon's commitIdentifier is any Java long, and a commit may
carry one (CommitRequest.identifier), so its outcome must be askable. Only past 64 bits are they bad."""
LONGEST = 4096
"""No string parameter is bounded above this (the partition filter's JSON is the longest)."""
KNOWN_GAPS: dict[tuple[str, str], str] = {}
"""Parameters still unbounded in modules outside this change; strict, so a fix makes the entry fail."""


def _params(dependant: Dependant) -> Iterator[tuple[str, str, Any]]:
    """(where, name, annotation) of the path and query parameters of a route and its dependencies."""
    for where, fields in (("path", dependant.path_params), ("query", dependant.query_params)):
        for field in fields:
            yield where, field.alias, field.field_info.annotation
    for sub in dependant.dependencies:
        yield from _params(sub)


def _get_routes() -> Iterator[tuple[str, list[tuple[str, str, Any]]]]:
    app = create_app(Settings(database_url="sqlite://", auto_migrate=False))
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute) and "GET" in (route.methods or ()):
            params = list(dict.fromkeys(_params(context.dependant)))
            # The path as served: a route of a router included in another has the outer prefixes too.
            assert context.path_format is not None
            yield context.path_format, params


ROUTES = dict(_get_routes())


def _base_type(annotation: Any) -> type:
    """int for `int` and `int | None`, str for `Literal["a", "b"]`; the type a parameter parses to."""
    if get_origin(annotation) is Literal:
        (kind,) = {type(a) for a in get_args(annotation)}
        return kind
    if get_origin(annotation) in (Union, types.UnionType):
        (inner,) = [a for a in get_args(annotation) if a is not type(None)]
        return _base_type(inner)
    assert isinstance(annotation, type), annotation
    return annotation


SAFE = st.text(alphabet=string.ascii_letters + string.digits + "_-", max_size=6)
# Cc: C0 (NUL included), DEL and C1. "/" never appears, so a bad path value still routes to its route.
CONTROL = st.characters(categories=["Cc"])


def bad_values(annotation: Any, name: str) -> st.SearchStrategy[str]:
    """Values of a parameter of this type that every route must refuse, as they appear in a URL."""
    kind = _base_type(annotation)
    if kind is int:
        beyond = st.integers(min_value=INT64_MAX + 1) | st.integers(max_value=-(2**63) - 1)
        negative = st.integers(min_value=-(2**63), max_value=-1)
        return (beyond if name in SIGNED else beyond | negative).map(str)
    if kind is str:
        with_control = st.tuples(SAFE, CONTROL, SAFE).map("".join)
        too_long = st.integers(min_value=LONGEST + 1, max_value=2 * LONGEST).map(lambda n: "a" * n)
        return with_control | too_long
    if kind is float:
        # Durations (GET /events?wait=): none is negative, NaN, infinite or anywhere near a million seconds.
        below = st.floats(max_value=-1e-9)
        above = st.floats(min_value=1e6)
        words = st.sampled_from(["nan", "NaN", "inf", "-inf", "soon", "1e400", ""])
        return (below | above).map(repr) | words
    pytest.fail(f"no bad values known for parameter {name}: {annotation}; extend bad_values")


def _cases() -> Iterator[Any]:
    for path, params in ROUTES.items():
        for where, name, annotation in params:
            gap = KNOWN_GAPS.get((path, name))
            marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
            yield pytest.param(path, where, name, annotation, id=f"{path}:{name}", marks=marks)


@pytest.fixture
def table(api: TestClient) -> PaimonTable:
    """A table with one snapshot and one commit, so a read whose bad value got through reaches rows."""
    created = pk_table(api)
    rows = rows_in_bucket(created, 0, range(20))
    commit(api, created, [created.message(rows[0], newFiles=[created.pk_file(rows, first_sequence=0)])])
    return created


def _valid(annotation: Any) -> str:
    return "1" if _base_type(annotation) is int else "x"


def _url(
    path: str, params: list[tuple[str, str, Any]], table: PaimonTable, bad: tuple[str, str]
) -> tuple[str, dict[str, str]]:
    """The route's URL with `bad` = (name, value) in its parameter and valid values in the other path
    parameters (the test table's id, so the request reaches its rows); other query parameters default."""
    url, query = path, {}
    for where, name, annotation in params:
        if name == bad[0]:
            value = bad[1]
        elif where == "path":
            value = _path_value(name, table) or _valid(annotation)
        else:
            continue
        if where == "path":
            url = url.replace("{" + name + "}", quote(value, safe=""))
        else:
            query[name] = value
    return url, query


def _path_value(name: str, table: PaimonTable) -> str | None:
    """The test table's spelling of a path parameter naming it (native id, or the REST catalog's parts)."""
    database, _, table_name = table.id.partition(".")
    return {"table_id": table.id, "prefix": "paimon", "database": database, "table": table_name}.get(name)


@pytest.mark.parametrize(("path", "where", "name", "annotation"), list(_cases()))
def test_bad_parameter_is_a_422_naming_it(
    api: TestClient, table: PaimonTable, database_url: str, path: str, where: str, name: str, annotation: Any
) -> None:
    params = ROUTES[path]
    before = (database_digest(api, database_url), tree_digest(table.location))

    @settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(value=bad_values(annotation, name))
    def refused(value: str) -> None:
        url, query = _url(path, params, table, (name, value))
        response = api.get(url, params=query)
        if path.startswith("/v1"):
            # Paimon's REST catalog: its ErrorResponse, 400 (Paimon has no 422), the name leading the message.
            assert response.status_code == 400, (url, query, response.status_code, response.text[:300])
            error = response.json()
            assert error["code"] == 400, error
            assert error["message"].startswith(f"{name}:"), error
            return
        assert response.status_code == 422, (url, query, response.status_code, response.text[:300])
        error = response.json()
        assert error["code"] == "INVALID_REQUEST", error
        assert error["field"] == name, error

    refused()
    assert (database_digest(api, database_url), tree_digest(table.location)) == before


def test_every_get_route_with_parameters_is_driven() -> None:
    """The enumeration finds the routes and parameters this file is about (it could silently find none)."""
    found = {(path, name) for path, params in ROUTES.items() for _, name, _ in params}
    assert {
        ("/tables/{table_id}/snapshots/{snapshot_id}", "snapshot_id"),
        ("/tables/{table_id}/snapshots", "before"),
        ("/tables/{table_id}/files", "snapshot"),
        ("/tables/{table_id}/commits/{commit_user}/{identifier}", "identifier"),
        ("/tables/{table_id}/commits/{commit_user}/{identifier}", "idempotencyKey"),
        ("/tables", "page_token"),
        ("/ops/overview", "minutes"),
        ("/dashboard/static/{name}", "name"),
    } <= found


def test_valid_values_of_the_same_parameters_are_answered(api: TestClient, table: PaimonTable) -> None:
    """The refusals above are for the values, not the routes: the largest ids and a plain string pass."""
    snapshots = f"/tables/{table.id}/snapshots"
    assert api.get(f"{snapshots}/{INT64_MAX}").json()["code"] == "SNAPSHOT_NOT_FOUND"
    assert api.get(snapshots, params={"before": INT64_MAX}).json()["snapshots"][0]["id"] == 1
    assert api.get(f"/tables/{table.id}/files", params={"snapshot": 1}).json()["snapshotId"] == 1
    outcome = f"/tables/{table.id}/commits/job-1/{-(2**63)}"
    assert api.get(outcome, params={"idempotencyKey": "k-1"}).json()["status"] == "unknown"
    assert api.get("/tables", params={"name_prefix": "ord"}).json()["tables"][0]["id"] == table.id
