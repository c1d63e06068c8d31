"""GET /tables/{id}/commits searched by commit user prefix, identifier and outcome (the dashboard's table
page), on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.commits import append_commit, post_commit
from tests.support.paimon_files import create_table


def test_the_history_is_searched_by_user_prefix_identifier_and_outcome(api: TestClient) -> None:
    table = create_table(api, "db", "t", {"id": "BIGINT"})
    for user, ident in (("alice", 1), ("alice", 2), ("al_x", 3), ("bob", 1)):
        answer = post_commit(api, table, append_commit(table, [{"id": ident}], user=user, identifier=ident))
        assert answer.status_code == 201, answer.text
    stale = append_commit(table, [{"id": 9}], user="alice", identifier=9, baseSnapshotId=1)
    assert post_commit(api, table, stale).status_code == 409

    def found(**params: Any) -> list[tuple[str, int, str]]:
        answer = api.get(f"/tables/{table.id}/commits", params=params)
        assert answer.status_code == 200, answer.text
        return [(c["commitUser"], c["identifier"], c["outcome"]) for c in answer.json()["commits"]]

    assert found(user_prefix="ali") == [
        ("alice", 9, "rejected"), ("alice", 2, "committed"), ("alice", 1, "committed")
    ]  # fmt: skip
    # `_` is the character, not LIKE's any-one-character: "al_" matches al_x only, not alice.
    assert found(user_prefix="al_") == [("al_x", 3, "committed")]
    assert found(identifier=1) == [("bob", 1, "committed"), ("alice", 1, "committed")]
    assert found(outcome="rejected") == [("alice", 9, "rejected")]
    assert found(user_prefix="alice", outcome="committed", identifier=2) == [("alice", 2, "committed")]
    assert found(user_prefix="nobody") == []
    assert found(user_prefix="alice", limit=1) == [("alice", 9, "rejected")]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"outcome": "won"}, "outcome"),
        ({"identifier": "x"}, "identifier"),
        ({"identifier": str(2**63)}, "identifier"),
        ({"user_prefix": ""}, "user_prefix"),
        ({"user_prefix": "a\x00"}, "user_prefix"),
        ({"user_prefix": "a" * 201}, "user_prefix"),
    ],
)
def test_a_bad_search_is_a_422_naming_the_parameter(
    api: TestClient, params: dict[str, str], field: str
) -> None:
    create_table(api, "db", "t", {"id": "BIGINT"})
    answer = api.get("/tables/db.t/commits", params=params)
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field, answer.json()
