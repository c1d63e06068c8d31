"""Backpressure at Paimon's REST commit: 429 with Retry-After in Paimon's ErrorResponse (Java's client
resends the same POST after Retry-After; pypaimon's commit loop sends it again), and nothing written.

The table's queue is jammed (tests/support/backpressure.py) on a real uvicorn; the writer is unmodified
pypaimon 2.1.0 with `metastore=rest`.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pyarrow as pa

from coordinator.settings import Settings
from tests.support.backpressure import Jam, refused
from tests.support.commits import append_commit
from tests.support.paimon_files import PaimonTable, read_text, tree_digest
from tests.support.rest_writers import CATALOG_NAME, create_rest_table, read_rows, rest_catalog, write_rows
from tests.support.served import LiveServer
from tests.support.waiting import wait_for

SCHEMA = pa.schema([("id", pa.int64())])
LIMIT = 2.0


def _jammable(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "commit_queue_max_wait_seconds": LIMIT,
            "lock_lease_seconds": 30,
            "lock_acquire_timeout_seconds": 120,
        }
    )


def _native(http: httpx.Client, table_id: str) -> PaimonTable:
    response = http.get(f"/tables/{table_id}")
    assert response.status_code == 200, response.text
    return PaimonTable(response.json())


def test_a_rest_commit_to_a_jammed_table_is_429_with_retry_after(settings: Settings) -> None:
    with LiveServer(_jammable(settings)) as server, httpx.Client(base_url=server.url, timeout=120) as http:
        table = create_rest_table(rest_catalog(server.url), "db.t", SCHEMA)
        write_rows(table, pa.Table.from_pylist([{"id": 1}], schema=SCHEMA))
        native = _native(http, "db.t")
        head = json.loads(read_text(f"{native.location}/snapshot/snapshot-1"))
        proposal = {
            "tableId": http.get("/tables/db.t").json()["uuid"],
            "baseSnapshotUuid": head["uuid"],
            "snapshot": {**head, "id": 2, "uuid": "c0ffee00-0000-4000-8000-000000000002"},
            "statistics": [],
        }
        jammed = [append_commit(native, [{"id": n}], user=f"native-{n}", identifier=1) for n in (2, 3)]
        with Jam(server, http, native, jammed):
            before = (tree_digest(native.location), http.get("/tables/db.t/commits").json())
            answer = http.post(
                f"/v1/{CATALOG_NAME}/databases/db/tables/t/commit",
                json=proposal,
                headers={"Authorization": "Bearer t"},
            )
            after = (tree_digest(native.location), http.get("/tables/db.t/commits").json())
        assert answer.status_code == 429, answer.text
        assert int(answer.headers["Retry-After"]) >= 1
        body = answer.json()
        assert body["code"] == 429
        assert "nothing of this one was done" in body["message"]
        assert after == before
        assert sum(refused(http).values()) == 1


def test_pypaimon_sends_a_refused_commit_again_and_it_lands_once(settings: Settings) -> None:
    with (
        LiveServer(_jammable(settings)) as server,
        httpx.Client(base_url=server.url, timeout=120) as http,
        ThreadPoolExecutor(1) as pool,
    ):
        table = create_rest_table(rest_catalog(server.url), "db.t", SCHEMA)
        native = _native(http, "db.t")
        jammed = [append_commit(native, [{"id": n}], user=f"native-{n}", identifier=1) for n in (1, 2)]
        with Jam(server, http, native, jammed):
            written = pool.submit(write_rows, table, pa.Table.from_pylist([{"id": 10}], schema=SCHEMA))
            wait_for(lambda: sum(refused(http).values()), "pypaimon's commit refused")
        written.result(timeout=120)
        assert sorted(row["id"] for row in read_rows(table)) == [1, 2, 10]  # the refused one once
        assert http.get("/tables/db.t").json()["latestSnapshotId"] == 3
