"""A big commit over HTTP: its body validated from bytes in one pass, with cyclic garbage collection
paused from the body's validation until its answer is sent, and every defect still a 422 naming the
field with nothing written."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from coordinator.api import collection_pause
from tests.support.paimon_files import PaimonTable, create_table, tree_digest


@pytest.fixture
def table(api: TestClient) -> PaimonTable:
    return create_table(api, "db", "big", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"])


@pytest.fixture
def collection_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def _files(table: PaimonTable, count: int) -> list[dict[str, Any]]:
    return [
        table.message(
            {"dt": f"d{k % 3}", "id": k}, newFiles=[table.append_file([{"dt": f"d{k % 3}", "id": k}])]
        )
        for k in range(count)
    ]


def _big(body: dict[str, Any]) -> dict[str, Any]:
    # Past the size from which collection pauses, whatever the number of files.
    return {**body, "properties": {"padding": "x" * collection_pause.BIG_BODY}}


def test_a_big_commit_is_answered_and_collection_resumes(
    api: TestClient, table: PaimonTable, collection_on: None
) -> None:
    body = _big({"commitUser": "job", "identifier": 1, "messages": _files(table, 30)})
    created = api.post(f"/tables/{table.id}/commits", json=body)
    assert created.status_code == 201, created.text
    assert gc.isenabled()  # resumed once the answer was sent
    again = api.post(f"/tables/{table.id}/commits", json=body)
    assert again.status_code == 200
    assert again.json()["deduplicated"]
    latest = api.get(f"/tables/{table.id}/snapshots/latest").json()
    assert latest["totalRecordCount"] == 30


@pytest.mark.parametrize(
    ("defect", "field"),
    [
        (lambda m: m[7]["newFiles"][0].update(fileSize=-1), "messages[7].newFiles[0].fileSize"),
        (lambda m: m[11]["newFiles"][0].update(fileName="x.txt"), "messages[11].newFiles[0].fileName"),
        (lambda m: m[3].update(partition={"dt": 5}), "messages[3].partition.dt"),
        (lambda m: m[4]["newFiles"][0].update(extraFiles=["../x"]), "messages[4].newFiles[0].extraFiles[0]"),
    ],
)
def test_a_defect_in_a_big_commit_names_its_field(
    api: TestClient, table: PaimonTable, collection_on: None, defect: Any, field: str
) -> None:
    messages = _files(table, 20)
    defect(messages)
    before = tree_digest(table.location)
    response = api.post(
        f"/tables/{table.id}/commits", json=_big({"commitUser": "job", "identifier": 1, "messages": messages})
    )
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert gc.isenabled()
    assert tree_digest(table.location) == before
    assert api.get(f"/tables/{table.id}/commits").json()["commits"] == []


def test_broken_json_is_a_422(api: TestClient, table: PaimonTable, collection_on: None) -> None:
    broken = b"{" + b" " * collection_pause.BIG_BODY
    response = api.post(
        f"/tables/{table.id}/commits", content=broken, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["code"] == "INVALID_REQUEST"
    assert gc.isenabled()


def test_pauses_nest_across_threads(collection_on: None) -> None:
    small = collection_pause.pause_collection(collection_pause.BIG_BODY - 1)
    assert gc.isenabled()
    small()
    first = collection_pause.pause_collection(collection_pause.BIG_BODY)
    assert not gc.isenabled()
    ends: list[Any] = []
    thread = threading.Thread(target=lambda: ends.append(collection_pause.pause_collection(10**9)))
    thread.start()
    thread.join()
    first()
    first()  # a second end of the same pause changes nothing
    assert not gc.isenabled()  # the other thread's pause still holds
    ends[0]()
    assert gc.isenabled()


def test_a_pause_keeps_collection_off_when_it_was_off(collection_on: None) -> None:
    gc.disable()
    end = collection_pause.pause_collection(collection_pause.BIG_BODY)
    end()
    assert not gc.isenabled()
