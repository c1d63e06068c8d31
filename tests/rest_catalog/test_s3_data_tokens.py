"""On the S3 store, a pypaimon REST client given only the coordinator's URI, the catalog name and a token
reads and writes the table's files with the store access the coordinator vends (`data-token.enabled`,
GET .../token, a session of the table's folder): its own environment has no AWS_* variable. The
credentials never reach the logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coordinator.access.tokens import TokenStore
from coordinator.db.engine import make_engine
from tests.support import REPO
from tests.support.rest_writers import CATALOG_NAME
from tests.support.seaweed import ACCESS_KEY, SECRET_KEY, SeaweedFS
from tests.support.served import ServedCoordinator


@pytest.mark.stores("s3")
def test_a_client_without_store_credentials_writes_and_reads_on_s3(
    database_url: str, warehouse_location: str, tmp_path: Path, seaweedfs: SeaweedFS
) -> None:
    log = tmp_path / "coordinator.log"
    with ServedCoordinator(
        database_url,
        warehouse_location,
        log,
        env={"COORDINATOR_REQUIRE_TOKENS": "true", "COORDINATOR_LOG_FORMAT": "json"},
    ) as served:
        engine = make_engine(database_url)
        tokens = TokenStore(engine)
        writer = tokens.create("lake-job", "writer", database="lake").token
        admin = tokens.create("ops", "admin").token
        engine.dispose()
        headers = {"Authorization": f"Bearer {admin}"}

        config = served.http.get("/v1/config", params={"warehouse": CATALOG_NAME}, headers=headers).json()
        assert config["overrides"] == {"data-token.enabled": "true"}

        # The client process is given the coordinator's URI, the catalog name and a token: no store.
        created = served.http.post(f"/v1/{CATALOG_NAME}/databases", json={"name": "lake"}, headers=headers)
        assert created.status_code == 200, created.text
        clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        client = subprocess.run(
            [sys.executable, "-m", "tests.rest_catalog.s3_client_process", served.url, admin],
            env={**clean, "HOME": str(tmp_path)},  # no ~/.aws either
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert client.returncode == 0, client.stderr[-4000:]
        assert json.loads(client.stdout) == [{"dt": "a", "id": 1}, {"dt": "a", "id": 3}, {"dt": "b", "id": 2}]

        table = served.http.get("/tables/lake.events", headers=headers).json()
        assert table["location"] == f"{warehouse_location}/lake.db/events"
        assert table["latestSnapshotId"] == 2

        vended = served.http.get(
            f"/v1/{CATALOG_NAME}/databases/lake/tables/events/token",
            headers={"Authorization": f"Bearer {writer}"},
        ).json()
        session = vended["token"]
        assert sorted(session) == [
            "fs.s3.accessKeyId",
            "fs.s3.accessKeySecret",
            "fs.s3.endpoint",
            "fs.s3.path-style-access",
            "fs.s3.region",
            "fs.s3.securityToken",
        ]
        assert session["fs.s3.endpoint"] == seaweedfs.endpoint_url
        assert session["fs.s3.path-style-access"] == "true"
        assert session["fs.s3.region"] == os.environ["AWS_REGION"]
        # A session of the table's folder (the default, `sts` mode), never the coordinator's own key
        # (tests/rest_catalog/test_scoped_data_tokens.py has what the store lets it do).
        assert session["fs.s3.accessKeyId"] != ACCESS_KEY
        assert session["fs.s3.accessKeySecret"] != SECRET_KEY
        # Lasting two hours (the default): pypaimon fetches again when less than one is left.
        assert abs(vended["expiresAtMillis"] - (time.time() + 7200) * 1000) < 60_000
        anonymous = served.http.get(f"/v1/{CATALOG_NAME}/databases/lake/tables/events/token")
        assert anonymous.status_code == 401
        assert SECRET_KEY not in anonymous.text
    logged = log.read_text()
    assert "/v1/paimon/databases/lake/tables/events/token" in logged  # the access log has the calls
    assert '"status": 200' in logged or '"status":200' in logged
    assert SECRET_KEY not in logged
    assert session["fs.s3.accessKeySecret"] not in logged
    assert session["fs.s3.securityToken"] not in logged
    assert f'"{ACCESS_KEY}"' not in logged
