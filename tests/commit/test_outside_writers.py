"""A writer outside the coordinator (pypaimon's own commit) on the same table, locally and on S3.

The coordinator never overwrites an outsider's snapshot, and never acknowledges a commit whose snapshot
id an outsider took before it was published: that commit is decided again on top of the outsider's.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
import pyarrow as pa
import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, expect

from coordinator.commit.publish import Publication
from coordinator.services import Services
from coordinator_client import CoordinatorClient
from coordinator_client.models import CommitRequest
from tests.support.commits import append_commit, post_commit
from tests.support.paimon_files import (
    PaimonTable,
    create_table,
    pypaimon_catalog_options,
    pypaimon_rows,
    sorted_rows,
)
from tests.support.pause import PausedCall
from tests.support.served import LiveServer

STORES = ("local", "s3")

FIELDS = {"dt": "STRING", "id": "BIGINT"}


def _body(table: PaimonTable, user: str, ids: range) -> dict[str, Any]:
    return append_commit(table, [{"dt": "a", "id": i} for i in ids], user=user, identifier=1)


def _ours(api: httpx.Client, table: PaimonTable, user: str, ids: range) -> dict[str, Any]:
    response = post_commit(api, table, _body(table, user, ids))
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def _outsiders(warehouse: str, table_id: str, ids: range) -> None:
    """pypaimon's own batch commit of rows `ids`: check that snapshot-N is absent, then write it."""
    from pypaimon import CatalogFactory

    table = CatalogFactory.create(pypaimon_catalog_options(warehouse)).get_table(table_id)
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(pa.table({"dt": ["a"] * len(ids), "id": pa.array(list(ids), pa.int64())}))
    commit = builder.new_commit()
    commit.commit(write.prepare_commit())
    commit.close()
    write.close()


def test_a_snapshot_id_taken_before_publication_is_decided_again(
    api: TestClient, warehouse_location: str
) -> None:
    table = create_table(api, "db", "shared", FIELDS, partitionKeys=["dt"])
    _ours(api, table, "first", range(3))
    # Our second commit stops after its commit point recorded snapshot 2, before snapshot-2 is written;
    # meanwhile pypaimon, which sees LATEST = 1, writes its own snapshot-2.
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    request = CommitRequest.model_validate(_body(table, "second", range(10, 13)))
    paused = PausedCall(lambda: services.committer.commit(table.id, request), at=Publication.write).start()
    _outsiders(warehouse_location, table.id, range(100, 104))
    answer = paused.resume()

    assert [s.id for s in answer.snapshots] == [3]  # decided again, on top of the outsider's 2
    expected = [{"dt": "a", "id": i} for i in (*range(3), *range(10, 13), *range(100, 104))]
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(expected)
    history = api.get(f"/tables/{table.id}/commits").json()["commits"]
    second = [
        (c["outcome"], [s["id"] for s in c["snapshots"]]) for c in history if c["commitUser"] == "second"
    ]
    assert second == [("committed", [3])]  # its snapshot 2 was never visible: nothing to report
    assert api.get(f"/tables/{table.id}").json()["latestSnapshotId"] == 3
    assert api.get(f"/tables/{table.id}").json()["totalRecordCount"] == len(expected)
    metrics = api.get("/metrics").text
    assert "coordinator_snapshots_taken_total 1.0" in metrics


def _after_the_check_before_the_move(store: str) -> tuple[Callable[..., Any], Callable[[FrameType], bool]]:
    """Where pypaimon's rename has found its snapshot-N absent and is about to move its file there."""
    if store == "s3":
        from pypaimon.filesystem.pyarrow_file_io import PyArrowFileIO

        return (
            PyArrowFileIO._get_file_info,
            lambda frame: (
                frame.f_back is not None
                and frame.f_back.f_code.co_name == "rename"
                and "/snapshot/snapshot-" in frame.f_locals["path_str"]
            ),
        )
    return (
        Path.exists,
        lambda frame: (
            frame.f_back is not None
            and frame.f_back.f_code.co_name == "rename"
            and frame.f_locals["self"].name.startswith("snapshot-")
        ),
    )


def _overwritten_by_pypaimon(http: httpx.Client, warehouse: str, store: str, table: PaimonTable) -> None:
    """Our commit "second" is acknowledged as snapshot 2, then pypaimon's own commit replaces it: pypaimon
    stops after it found snapshot-2 absent, just before it moves its file there; we publish and
    acknowledge our snapshot 2; then pypaimon's move replaces it (its check-then-copy)."""
    at, when = _after_the_check_before_the_move(store)
    outsider = PausedCall(
        lambda: _outsiders(warehouse, table.id, range(100, 104)), at=at, returning=True, when=when
    ).start()
    acknowledged = _ours(http, table, "second", range(10, 13))
    assert [s["id"] for s in acknowledged["snapshots"]] == [2]
    outsider.resume()
    read = sorted(r["id"] for r in pypaimon_rows(warehouse, table.id))
    assert read == [0, 1, 2, 100, 101, 102, 103]  # ours is gone from storage


def test_an_acknowledged_snapshot_an_outsider_overwrote_is_applied_again(
    api: TestClient, warehouse_location: str, store: str
) -> None:
    table = create_table(api, "db", "lost", FIELDS, partitionKeys=["dt"])
    _ours(api, table, "first", range(3))
    _overwritten_by_pypaimon(api, warehouse_location, store, table)

    services: Services = api.app.state.services  # type: ignore[attr-defined]
    assert services.overwrite_watch.check() == [table.id]  # the periodic check, run now
    expected = [{"dt": "a", "id": i} for i in (*range(3), *range(10, 13), *range(100, 104))]
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(expected)
    history = api.get(f"/tables/{table.id}/commits").json()["commits"]
    second = [
        (c["outcome"], [s["id"] for s in c["snapshots"]]) for c in history if c["commitUser"] == "second"
    ]
    assert sorted(second) == [("committed", [3]), ("overwritten", [2])]
    assert api.get(f"/tables/{table.id}").json()["totalRecordCount"] == len(expected)
    assert "coordinator_snapshots_overwritten_total 1.0" in api.get("/metrics").text
    assert services.overwrite_watch.check() == []  # taken back once


@pytest.mark.stores("local")  # the dashboard reads the database; the store is beside the point
def test_the_dashboard_shows_commits_an_outside_writer_overwrote(
    live_server: LiveServer, http: httpx.Client, warehouse_location: str, store: str, browser: Browser
) -> None:
    table = create_table(http, "db", "lost", FIELDS, partitionKeys=["dt"])
    _ours(http, table, "first", range(3))
    _overwritten_by_pypaimon(http, warehouse_location, store, table)
    assert live_server.services.overwrite_watch.check() == [table.id]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/dashboard")
    row = page.locator('[data-testid="table-row"][data-table-id="db.lost"]')
    expect(row.get_by_test_id("table-overwritten")).to_have_text(
        "overwritten by an outside writer (1)", timeout=15_000
    )
    assert http.get("/ops/overview").json()["tables"][0]["overwritten"] == 1


def test_outsider_snapshots_are_adopted_never_overwritten(api: TestClient, warehouse_location: str) -> None:
    table = create_table(api, "db", "adopted", FIELDS, partitionKeys=["dt"])
    _ours(api, table, "w", range(2))
    _outsiders(warehouse_location, table.id, range(50, 52))
    _outsiders(warehouse_location, table.id, range(60, 62))
    answer = _ours(api, table, "w2", range(5, 7))
    assert [s["id"] for s in answer["snapshots"]] == [4]
    expected = [{"dt": "a", "id": i} for i in (0, 1, 50, 51, 60, 61, 5, 6)]
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(expected)


def _pypaimon_writer(warehouse: str, table_id: str, writer: int, commits: int, start: Any) -> tuple[int, int]:
    """A process committing with pypaimon's own commit: (commits it reported done, commits that raised)."""
    start.wait()
    done = failed = 0
    for k in range(commits):
        first = 1_000_000 + (writer * commits + k) * 10
        try:
            _outsiders(warehouse, table_id, range(first, first + 10))
            done += 1
        except Exception:  # pypaimon gives up after its own retries: counted, not our concern here
            failed += 1
    return done, failed


@pytest.mark.slow
@pytest.mark.stores("s3")
def test_pypaimon_writers_beside_the_coordinator_lose_no_acknowledged_commit(
    live_server: LiveServer, warehouse_location: str
) -> None:
    writers, commits = 4, 20
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        table = create_table(http, "db", "mixed", FIELDS, partitionKeys=["dt"])
    context = multiprocessing.get_context("spawn")
    start = context.Manager().Event()
    acknowledged: dict[int, list[int]] = {}

    def coordinator_writer(writer: int) -> None:
        with CoordinatorClient(live_server.url, timeout=120) as client:
            start.wait()
            for k in range(commits):
                ids = range((writer * commits + k) * 10, (writer * commits + k + 1) * 10)
                answer = client.commit(
                    table.id, _body(table, f"coordinator-{writer}", ids) | {"identifier": k}
                )
                acknowledged[answer.snapshots[0].id] = list(ids)

    with ProcessPoolExecutor(writers, mp_context=context) as pool:
        outsiders = [
            pool.submit(_pypaimon_writer, warehouse_location, table.id, w, commits, start)
            for w in range(writers)
        ]
        threads = [threading.Thread(target=coordinator_writer, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        time.sleep(2)  # the pypaimon processes are up (they import pypaimon first)
        start.set()
        for t in threads:
            t.join(600)
        reported = [f.result(600) for f in outsiders]

    assert len(acknowledged) == writers * commits  # every coordinator commit answered 201
    live_server.services.overwrite_watch.check()  # the periodic check, run now
    read = {r["id"] for r in pypaimon_rows(warehouse_location, table.id)}
    missing = [ids for ids in acknowledged.values() if not set(ids) <= read]
    assert missing == []  # the rows of every acknowledged commit are there
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        history = http.get(f"/tables/{table.id}/commits", params={"limit": 1000}).json()["commits"]
        metrics = http.get("/metrics").text
    overwritten = [c for c in history if c["outcome"] == "overwritten"]
    [counted] = [
        line for line in metrics.splitlines() if line.startswith("coordinator_snapshots_overwritten_total")
    ]
    assert len(overwritten) == float(counted.split()[-1])  # each one reported in the history and counted
    pypaimon_done = sum(done for done, _ in reported)
    pypaimon_read = sum(1 for w in range(writers * commits) if 1_000_000 + w * 10 in read)
    print(
        f"pypaimon: {pypaimon_done} reported done, {pypaimon_read} read back; coordinator: "
        f"{len(acknowledged)} acknowledged, all read back, {len(overwritten)} overwritten and applied again"
    )
