"""A REST commit that finds the table's lock held past the acquire timeout: 503 with Retry-After in
Paimon's ErrorResponse (Java's client resends the same POST on it), and nothing written."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pyarrow as pa
import pytest

from coordinator.settings import Settings
from tests.support.paimon_files import read_text, tree_digest
from tests.support.rest_writers import CATALOG_NAME, create_rest_table, rest_catalog, write_rows
from tests.support.served import LiveServer

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture
def impatient(settings: Settings) -> Iterator[LiveServer]:
    with LiveServer(settings.model_copy(update={"lock_acquire_timeout_seconds": 0.3})) as server:
        yield server


def test_a_held_lock_is_503_with_retry_after(impatient: LiveServer) -> None:
    catalog = rest_catalog(impatient.url)
    table = create_rest_table(catalog, "db.t", SCHEMA)
    write_rows(table, pa.Table.from_pylist([{"id": 1}], schema=SCHEMA))
    with httpx.Client(base_url=impatient.url, timeout=60) as http:
        native = http.get("/tables/db.t").json()
        head = json.loads(read_text(f"{native['location']}/snapshot/snapshot-1"))
        # Snapshot 1 again as 2 on top of it: valid up to the lock (its manifest lists are there).
        proposal = {
            "tableId": native["uuid"],
            "baseSnapshotUuid": head["uuid"],
            "snapshot": {**head, "id": 2, "uuid": "c0ffee00-0000-4000-8000-000000000002"},
            "statistics": [],
        }
        before = (tree_digest(native["location"]), http.get("/tables/db.t/commits").json())
        lease = impatient.services.locks.acquire("table:db.t", "a-long-compaction", timeout_seconds=1)
        try:
            answer = http.post(
                f"/v1/{CATALOG_NAME}/databases/db/tables/t/commit",
                json=proposal,
                headers={"Authorization": "Bearer t"},
            )
        finally:
            impatient.services.locks.release(lease)
        assert answer.status_code == 503, answer.text
        assert int(answer.headers["Retry-After"]) >= 1
        assert answer.json()["code"] == 503
        assert (tree_digest(native["location"]), http.get("/tables/db.t/commits").json()) == before
        assert http.get("/tables/db.t").json()["latestSnapshotId"] == 1
