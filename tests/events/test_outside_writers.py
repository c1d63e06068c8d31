"""Snapshots written outside the coordinator (pypaimon's own commit) are changes too: adopted ones, and one
that replaced an acknowledged commit of ours (which is then applied again), each get their event."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from coordinator.services import Services
from tests.commit.test_outside_writers import FIELDS, _ours, _outsiders, _overwritten_by_pypaimon
from tests.support.paimon_files import create_table

pytestmark = pytest.mark.stores("local")


def commits(api: TestClient, table_id: str) -> list[tuple[Any, ...]]:
    found = api.get("/events", params={"table": table_id, "kind": "commit"}).json()["events"]
    return [(e["commitUser"], e["snapshotIds"], e["details"]) for e in found]


def test_adopted_snapshots_have_their_events_in_snapshot_order(
    api: TestClient, warehouse_location: str, store: str
) -> None:
    table = create_table(api, "db", "adopted", FIELDS, partitionKeys=["dt"])
    _ours(api, table, "w", range(2))
    _outsiders(warehouse_location, table.id, range(50, 52))
    _outsiders(warehouse_location, table.id, range(60, 62))
    _ours(api, table, "w2", range(5, 7))

    found = commits(api, table.id)
    assert [ids for _, ids, _ in found] == [[1], [2], [3], [4]]
    assert [d.get("outside", False) for _, _, d in found] == [False, True, True, False]
    assert found[1][2]["commitKinds"] == ["APPEND"]


def test_an_overwritten_commit_has_the_outsiders_event_then_its_reapplication(
    api: TestClient, warehouse_location: str, store: str
) -> None:
    table = create_table(api, "db", "lost", FIELDS, partitionKeys=["dt"])
    _ours(api, table, "first", range(3))
    _overwritten_by_pypaimon(api, warehouse_location, store, table)
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    assert services.overwrite_watch.check() == [table.id]

    found = commits(api, table.id)
    assert [(user == "second", ids) for user, ids, _ in found] == [
        (False, [1]),
        (True, [2]),  # acknowledged, then overwritten on storage
        (False, [2]),  # the outsider's snapshot 2, recorded in its place
        (True, [3]),  # ours applied again on top
    ]
    assert found[2][2]["replaced"] == 2
    assert found[3][2]["reapplied"] is True
