"""GET .../token on SeaweedFS with tokens required (issue 29, item 3): store credentials go only to a token
that may write the table, as a session the store itself limits to the table's folder; pypaimon writes
and reads with it through the REST catalog; the store refuses it elsewhere; no secret reaches the log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from coordinator.access.tokens import TokenStore
from coordinator.app import create_app
from coordinator.clock import Clock
from coordinator.db.engine import make_engine
from coordinator.errors import NotSupported
from coordinator.settings import Settings
from coordinator.storage.vended_credentials import DataTokens
from tests.rest_catalog.table_client_process import SCHEMA
from tests.support import REPO
from tests.support.paimon_files import table_request
from tests.support.rest_writers import CATALOG_NAME, create_rest_table, rest_catalog, write_rows
from tests.support.s3_requests import s3_call, vended_key
from tests.support.seaweed import ACCESS_KEY, BUCKET, REGION, SECRET_KEY, SeaweedFS
from tests.support.served import ServedCoordinator, free_port

DENIED = (403, "AccessDenied")
ROWS = [{"dt": "a", "id": 1}, {"dt": "a", "id": 3}, {"dt": "b", "id": 2}]


class Tokens:
    def __init__(self, database_url: str) -> None:
        engine = make_engine(database_url)
        store = TokenStore(engine)
        self.admin = store.create("ops", "admin").token
        self.writer_a = store.create("job-a", "writer", database="a").token
        self.writer_b = store.create("job-b", "writer", database="b").token
        self.reader = store.create("dashboard", "reader").token
        engine.dispose()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def token_path(table: str) -> str:
    database, name = table.split(".")
    return f"/v1/{CATALOG_NAME}/databases/{database}/tables/{name}/token"


def folder(http: httpx.Client, table: str, token: str) -> str:
    """The table's folder as a key prefix of the bucket, from its location."""
    location: str = http.get(f"/tables/{table}", headers=bearer(token)).json()["location"]
    return location.removeprefix(f"s3://{BUCKET}/")


def pypaimon_process(url: str, token: str, table: str, mode: str, home: Path) -> list[dict[str, object]]:
    """Run tests.rest_catalog.table_client_process with no AWS_* variable and no ~/.aws: the only store
    access it has is what the coordinator vends."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    done = subprocess.run(
        [sys.executable, "-m", "tests.rest_catalog.table_client_process", url, token, table, mode],
        env={**clean, "HOME": str(home)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    rows: list[dict[str, object]] = json.loads(done.stdout)
    return rows


@pytest.fixture
def served(database_url: str, warehouse_location: str, tmp_path: Path) -> Iterator[ServedCoordinator]:
    with ServedCoordinator(
        database_url,
        warehouse_location,
        tmp_path / "coordinator.log",
        env={"COORDINATOR_REQUIRE_TOKENS": "true", "COORDINATOR_LOG_FORMAT": "json"},
    ) as coordinator:
        yield coordinator


@pytest.mark.stores("s3")
def test_credentials_go_only_where_the_token_may_write(
    database_url: str, served: ServedCoordinator, seaweedfs: SeaweedFS, tmp_path: Path
) -> None:
    tokens = Tokens(database_url)
    admin = rest_catalog(served.url, tokens.admin)
    for table in ("a.t1", "b.t2"):
        create_rest_table(admin, table, SCHEMA, partition_keys=["dt"])
    http = served.http

    # A reader, and a writer of another database, get no store access to a.t1.
    for refused in (tokens.reader, tokens.writer_b):
        answer = http.get(token_path("a.t1"), headers=bearer(refused))
        assert answer.status_code == 403, answer.text
        assert answer.json()["code"] == 403
        assert "fs.s3" not in answer.text
    assert http.get(token_path("a.t1")).status_code == 401

    # The grant's writer and an admin do: a session, not the coordinator's key, lasting the default two
    # hours as the store's Expiration says; one session per table and access, not one per call.
    as_writer = http.get(token_path("a.t1"), headers=bearer(tokens.writer_a)).json()
    as_admin = http.get(token_path("a.t1"), headers=bearer(tokens.admin)).json()
    options = as_writer["token"]
    assert options["fs.s3.endpoint"] == seaweedfs.endpoint_url
    assert options["fs.s3.accessKeyId"] != ACCESS_KEY
    assert options["fs.s3.securityToken"]
    assert SECRET_KEY not in json.dumps(as_writer)
    assert abs(as_writer["expiresAtMillis"] - (time.time() + 7200) * 1000) < 60_000
    assert as_admin == as_writer

    # pypaimon, given only the catalog options and the writer's token, writes and reads a.t1.
    assert pypaimon_process(served.url, tokens.writer_a, "a.t1", "write", tmp_path) == ROWS
    assert http.get("/tables/a.t1", headers=bearer(tokens.admin)).json()["latestSnapshotId"] == 2

    # The store itself holds the session to a.t1's folder.
    url, key = seaweedfs.endpoint_url, vended_key(options)
    a1, b2 = folder(http, "a.t1", tokens.admin), folder(http, "b.t2", tokens.admin)
    assert s3_call(url, "PUT", key, f"{a1}/probe", b"x") == (200, "")
    assert s3_call(url, "GET", key, f"{a1}/schema/schema-0") == (200, "")
    assert s3_call(url, "GET", key, list_prefix=f"{a1}/") == (200, "")
    assert s3_call(url, "DELETE", key, f"{a1}/probe")[0] == 204
    assert s3_call(url, "PUT", key, f"{b2}/stolen", b"x") == DENIED
    assert s3_call(url, "GET", key, f"{b2}/schema/schema-0") == DENIED
    assert s3_call(url, "DELETE", key, f"{b2}/schema/schema-0") == DENIED
    assert s3_call(url, "GET", key, list_prefix=f"{b2}/") == DENIED
    assert s3_call(url, "GET", key, list_prefix="") == DENIED
    assert s3_call(url, "PUT", key, "at-the-root", b"x") == DENIED
    admin_key = vended_key(http.get(token_path("b.t2"), headers=bearer(tokens.admin)).json()["token"])
    assert s3_call(url, "GET", admin_key, f"{b2}/schema/schema-0") == (200, "")  # b.t2's own session

    served.stop()
    logged = served.log.read_text()
    assert token_path("a.t1") in logged  # the access log has the calls, refused and served
    assert '"status": 403' in logged
    assert '"status": 200' in logged
    for secret in (options["fs.s3.accessKeySecret"], options["fs.s3.securityToken"], SECRET_KEY):
        assert secret not in logged


@pytest.mark.stores("s3")
def test_readers_get_read_only_sessions_when_the_operator_says_so(
    database_url: str, warehouse_location: str, seaweedfs: SeaweedFS, tmp_path: Path
) -> None:
    with ServedCoordinator(
        database_url,
        warehouse_location,
        tmp_path / "coordinator.log",
        env={"COORDINATOR_REQUIRE_TOKENS": "true", "COORDINATOR_DATA_TOKEN_READERS": "true"},
    ) as served:
        tokens = Tokens(database_url)
        admin = rest_catalog(served.url, tokens.admin)
        create_rest_table(admin, "a.t1", SCHEMA, partition_keys=["dt"])
        write_rows(admin.get_table("a.t1"), pa.Table.from_pylist(ROWS, schema=SCHEMA))
        http = served.http
        written = http.get(token_path("a.t1"), headers=bearer(tokens.writer_a)).json()["token"]
        read = http.get(token_path("a.t1"), headers=bearer(tokens.reader)).json()["token"]
        # A writer of another database may not read a.t1 at all (a grant bounds reads too): no session,
        # read-only or not, whatever the operator lets readers have.
        refused = http.get(token_path("a.t1"), headers=bearer(tokens.writer_b))
        assert refused.status_code == 403
        assert "may not read a.t1" in refused.json()["message"]
        assert "fs.s3" not in refused.text
        assert read["fs.s3.accessKeyId"] not in (written["fs.s3.accessKeyId"], ACCESS_KEY)

        assert pypaimon_process(served.url, tokens.reader, "a.t1", "read", tmp_path) == ROWS
        url, key, a1 = seaweedfs.endpoint_url, vended_key(read), folder(http, "a.t1", tokens.admin)
        assert s3_call(url, "GET", key, f"{a1}/schema/schema-0") == (200, "")
        assert s3_call(url, "PUT", key, f"{a1}/data-0.parquet", b"x") == DENIED
        assert s3_call(url, "DELETE", key, f"{a1}/schema/schema-0") == DENIED


@pytest.mark.stores("s3")
def test_static_mode_vends_the_configured_key_and_readers_the_reader_pair(
    settings: Settings, seaweedfs: SeaweedFS
) -> None:
    static = settings.model_copy(
        update={
            "require_tokens": True,
            "data_token_mode": "static",
            "data_token_readers": True,
            "reader_access_key_id": "reader-key",
            "reader_secret_access_key": SecretStr("reader-secret"),
        }
    )
    with TestClient(create_app(static)) as client:
        store = client.app.state.services.tokens
        admin = store.create("ops", "admin").token
        writer, reader = store.create("w", "writer", database="a").token, store.create("r", "reader").token
        created = client.post(
            "/tables", json=table_request("a", "t1", {"id": "BIGINT"}), headers=bearer(admin)
        )
        assert created.status_code == 201, created.text
        where = {
            "fs.s3.endpoint": seaweedfs.endpoint_url,
            "fs.s3.path-style-access": "true",
            "fs.s3.region": REGION,
        }
        as_writer = client.get(token_path("a.t1"), headers=bearer(writer)).json()
        # Today's behaviour, chosen: the key itself, announced for data_token_seconds.
        assert as_writer["token"] == {
            **where,
            "fs.s3.accessKeyId": ACCESS_KEY,
            "fs.s3.accessKeySecret": SECRET_KEY,
        }
        assert abs(as_writer["expiresAtMillis"] - (time.time() + 7200) * 1000) < 60_000
        as_reader = client.get(token_path("a.t1"), headers=bearer(reader)).json()
        assert as_reader["token"] == {
            **where,
            "fs.s3.accessKeyId": "reader-key",
            "fs.s3.accessKeySecret": "reader-secret",
        }
    without_readers = static.model_copy(update={"data_token_readers": False})
    with TestClient(create_app(without_readers)) as client:
        reader = client.app.state.services.tokens.create("r", "reader").token
        refused = client.get(token_path("a.t1"), headers=bearer(reader))
        assert refused.status_code == 403
        assert "reader-secret" not in refused.text


def test_static_and_readers_without_the_reader_pair_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="reader_access_key_id"):
        Settings(data_token_mode="static", data_token_readers=True)
    with pytest.raises(ValueError, match="go together"):
        Settings(reader_access_key_id="reader-key")


def test_on_aws_without_a_role_no_session_is_vended_and_never_the_key() -> None:
    environ = {"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "the-secret", "AWS_REGION": "eu-west-1"}
    tokens = DataTokens(Settings(warehouse="s3://bucket/wh"), environ, Clock())
    with pytest.raises(NotSupported, match="COORDINATOR_DATA_TOKEN_ROLE_ARN"):
        tokens.vend("s3://bucket/wh/a.db/t1", "write")
    tokens.close()


@pytest.mark.stores("s3")
def test_without_tokens_required_every_caller_gets_a_session(
    settings: Settings, seaweedfs: SeaweedFS
) -> None:
    with TestClient(create_app(settings)) as client:
        created = client.post("/tables", json=table_request("a", "t1", {"id": "BIGINT"}))
        assert created.status_code == 201, created.text
        options = client.get(token_path("a.t1")).json()["token"]
        assert options["fs.s3.accessKeyId"] != ACCESS_KEY
        assert options["fs.s3.securityToken"]
        assert client.get(token_path("a.t2")).status_code == 404


@pytest.mark.stores("s3")
def test_an_unreachable_sts_is_a_503_in_paimons_shape(settings: Settings, seaweedfs: SeaweedFS) -> None:
    unreachable = settings.model_copy(update={"data_token_sts_endpoint": f"http://127.0.0.1:{free_port()}"})
    with TestClient(create_app(unreachable)) as client:
        # Without tokens required (the embedded default) the caller is an admin, as before.
        created = client.post("/tables", json=table_request("a", "t1", {"id": "BIGINT"}))
        assert created.status_code == 201, created.text
        answer = client.get(token_path("a.t1"))
        assert answer.status_code == 503, answer.text
        assert answer.headers["Retry-After"] == "5"
        assert answer.json()["code"] == 503
        assert SECRET_KEY not in answer.text
