"""Partition mark-done through both doors (native and Paimon's REST catalog): a `partition-mark` event of
the feed, written with the history row; a refused mark writes neither."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.commits import history
from tests.support.paimon_files import PaimonTable, create_table


def feed(api: TestClient, table: PaimonTable) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api.get("/events", params={"table": table.id}).json()["events"]
    return found


@pytest.fixture
def table(api: TestClient) -> PaimonTable:
    fields = {"dt": "DATE", "hr": "INT", "id": "BIGINT"}
    return create_table(api, "marks", f"t_{uuid.uuid4().hex[:6]}", fields, partitionKeys=["dt", "hr"])


def test_a_native_mark_is_an_event_with_its_partitions(api: TestClient, table: PaimonTable) -> None:
    body = {"partitions": [{"dt": "2024-01-01", "hr": 3}, {"hr": 4, "dt": "2024-01-01"}]}
    answer = api.post(f"/tables/{table.id}/partitions/mark", json=body)
    assert answer.status_code == 200, answer.text
    wanted = [{"dt": "2024-01-01", "hr": 3}, {"dt": "2024-01-01", "hr": 4}]
    assert answer.json() == {"partitions": wanted}

    mark = feed(api, table)[-1]
    assert mark["kind"] == "partition-mark"
    assert [p["partition"] for p in mark["partitions"]] == wanted
    assert all(p["addedFiles"] == p["addedRows"] == 0 for p in mark["partitions"])
    assert history(api, table.id)[0]["action"] == "mark-partitions-done"


def test_a_rest_mark_is_an_event_with_paimons_partition_text(api: TestClient, table: PaimonTable) -> None:
    database, name = table.id.split(".")
    path = f"/v1/paimon/databases/{database}/tables/{name}/partitions/mark"
    answer = api.post(path, json={"specs": [{"dt": "2024-01-02", "hr": "7"}]})
    assert answer.status_code == 200, answer.text
    mark = feed(api, table)[-1]
    assert (mark["kind"], [p["partition"] for p in mark["partitions"]]) == (
        "partition-mark",
        [{"dt": "2024-01-02", "hr": "7"}],
    )


@pytest.mark.parametrize(
    ("partitions", "field"),
    [
        ([], "partitions"),
        ([{"dt": "2024-01-01"}], "partitions[0]"),
        ([{"dt": "2024-01-01", "hr": 1, "id": 2}], "partitions[0].id"),
        ([{"dt": "yesterday", "hr": 1}], "partitions[0].dt"),
        ([{"dt": "2024-01-01", "hr": "one"}], "partitions[0].hr"),
    ],
)
def test_a_bad_mark_is_a_422_naming_it_and_writes_nothing(
    api: TestClient, table: PaimonTable, partitions: list[dict[str, Any]], field: str
) -> None:
    before = feed(api, table), history(api, table.id)
    answer = api.post(f"/tables/{table.id}/partitions/mark", json={"partitions": partitions})
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field
    assert (feed(api, table), history(api, table.id)) == before


def test_a_bad_rest_mark_is_paimons_400_and_writes_nothing(api: TestClient, table: PaimonTable) -> None:
    database, name = table.id.split(".")
    path = f"/v1/paimon/databases/{database}/tables/{name}/partitions/mark"
    before = feed(api, table)
    for specs in ([{"dt": "2024-01-01"}], [{"dt": "2024-01-01", "hr": "1", "x": "y"}], []):
        answer = api.post(path, json={"specs": specs})
        assert answer.status_code == 400, answer.text
    assert feed(api, table) == before


def test_a_table_without_partitions_has_none_to_mark(api: TestClient) -> None:
    flat = create_table(api, "marks", f"f_{uuid.uuid4().hex[:6]}", {"id": "BIGINT"})
    answer = api.post(f"/tables/{flat.id}/partitions/mark", json={"partitions": [{"id": 1}]})
    assert answer.status_code == 422
    assert answer.json()["field"] == "partitions"
