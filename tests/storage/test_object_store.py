"""The coordinator on a real S3 store (SeaweedFS): locations, verified files, a failing store, secrets."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from coordinator.settings import Settings
from coordinator_client import CoordinatorClient
from tests.support.commits import commit_request
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows, sorted_rows, tree_digest
from tests.support.seaweed import ACCESS_KEY, SECRET_KEY, SeaweedFS
from tests.support.served import LiveServer, ServedCoordinator

STORES = ("local", "s3")

FIELDS = {"dt": "STRING", "id": "BIGINT"}


def _commit_body(
    table: PaimonTable, user: str, identifier: int, files: list[dict[str, Any]]
) -> dict[str, Any]:
    return commit_request([table.message({"dt": "a"}, newFiles=files)], user=user, identifier=identifier)


def test_a_table_answers_its_location_with_the_scheme(
    api: TestClient, store: str, warehouse_location: str
) -> None:
    table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
    assert table.location == f"{warehouse_location}/db.db/t"
    assert table.location.startswith("s3://" if store == "s3" else "/")
    health = api.get("/health").json()
    assert health["warehouse"] == warehouse_location
    assert health["checks"] == {"database": "ok", "warehouse": "ok"}


@pytest.mark.parametrize("problem", ["missing", "size"])
def test_a_commit_naming_a_file_not_on_storage_changes_nothing(
    api: TestClient, warehouse_location: str, problem: str
) -> None:
    table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
    good = table.append_file([{"dt": "a", "id": 1}])
    bad = (
        dict(good, fileName=f"data-{uuid.uuid4()}-0.parquet")
        if problem == "missing"
        else dict(good, fileSize=good["fileSize"] + 1)
    )
    files = [table.append_file([{"dt": "a", "id": 2}]), bad]
    before = tree_digest(table.location)
    response = api.post(f"/tables/{table.id}/commits", json=_commit_body(table, "w", 1, files))
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["code"] == ("DATA_FILE_MISSING" if problem == "missing" else "DATA_FILE_SIZE_MISMATCH")
    assert error["field"] == "messages[0].newFiles[1]"
    assert bad["fileName"] in error["message"]
    assert ("not on storage" if problem == "missing" else f"declares {bad['fileSize']}") in error["message"]
    assert tree_digest(table.location) == before
    assert api.get(f"/tables/{table.id}").json()["latestSnapshotId"] is None
    assert api.get(f"/tables/{table.id}/commits").json()["commits"] == []


def test_an_s3_table_is_registered_by_its_uri(api: TestClient, store: str, warehouse_location: str) -> None:
    table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
    rows = [{"dt": "a", "id": i} for i in range(4)]
    assert (
        api.post(
            f"/tables/{table.id}/commits", json=_commit_body(table, "w", 1, [table.append_file(rows)])
        ).status_code
        == 201
    )
    spelled = (
        table.location.replace("s3://", "s3a://") + "/" if store == "s3" else f"file://{table.location}/"
    )
    api.delete(f"/tables/{table.id}", params={"purge": "false"})
    response = api.post("/tables", json={"database": "again", "name": "t", "location": spelled})
    assert response.status_code == 201, response.text
    assert response.json()["location"] == table.location
    assert response.json()["latestSnapshotId"] == 1


@pytest.mark.stores("s3")  # a local folder holds no credentials
def test_the_warehouse_secret_is_never_logged_or_answered(
    database_url: str, warehouse_location: str, store: str, tmp_path: Path
) -> None:
    secret_uri = warehouse_location.replace("s3://", f"s3://{ACCESS_KEY}:{SECRET_KEY}@") + "?region=us-east-1"
    with ServedCoordinator(database_url, secret_uri, tmp_path / "coordinator.log") as served:
        table = create_table(served.http, "db", "t", FIELDS)
        answers = [served.http.get(p).text for p in ("/health", f"/tables/{table.id}", "/openapi.json")]
    assert warehouse_location in answers[0]  # the place is shown, the credentials are not
    for text in (*answers, served.log.read_text()):
        assert SECRET_KEY not in text
        assert f"{ACCESS_KEY}:" not in text


@pytest.mark.stores("s3")  # the local disk does not stop
def test_a_stopped_store_answers_503_and_every_commit_lands_once(
    settings: Settings, store: str, seaweedfs: SeaweedFS
) -> None:
    with LiveServer(settings) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        table = create_table(http, "db", "t", FIELDS, partitionKeys=["dt"])
        files = {i: table.append_file([{"dt": "a", "id": i}]) for i in range(12)}
        results: dict[int, int] = {}

        def writer(first: int) -> None:
            with CoordinatorClient(server.url, max_unavailable_retries=30) as patient:
                for i in range(first, first + 3):
                    answer = patient.commit(table.id, _commit_body(table, f"w{first}", i, [files[i]]))
                    results[i] = answer.snapshots[0].id

        seaweedfs.stop()
        try:
            down = http.post(f"/tables/{table.id}/commits", json=_commit_body(table, "probe", 1, [files[0]]))
            assert down.status_code == 503
            assert down.json()["code"] == "STORAGE_UNAVAILABLE"
            assert int(down.headers["Retry-After"]) >= 1
            health = http.get("/health")
            assert health.status_code == 503
            assert health.json()["checks"]["database"] == "ok"
            assert health.json()["checks"]["warehouse"].startswith("unavailable")
            threads = [threading.Thread(target=writer, args=(first,)) for first in (0, 3, 6, 9)]
            for t in threads:
                t.start()
        finally:
            threading.Timer(3, seaweedfs.start).start()
        for t in threads:
            t.join(120)
        assert sorted(results) == list(range(12))
        assert len(set(results.values())) == 12  # every commit once, each its own snapshot
        assert http.get("/health").status_code == 200
    assert pypaimon_rows(settings.warehouse, table.id) == sorted_rows(
        [{"dt": "a", "id": i} for i in range(12)]
    )
