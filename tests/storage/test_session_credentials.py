"""Table-scoped sessions from a real STS (SeaweedFS's, on its S3 port): what the store lets a session do,
for how long, how the cache hands them out, and what a missing or failing STS is answered with."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from coordinator.clock import Clock
from coordinator.errors import NotSupported, StorageUnavailable
from coordinator.storage.session_credentials import TableSessions, renew_below, table_policy
from coordinator.storage.sigv4 import AwsKey
from tests.support.s3_requests import s3_call
from tests.support.seaweed import ACCESS_KEY, BUCKET, REGION, SECRET_KEY, SeaweedFS
from tests.support.served import free_port

pytestmark = pytest.mark.s3
ADMIN = AwsKey(ACCESS_KEY, SECRET_KEY)


class MovableClock(Clock):
    """Real time plus an offset the test moves: the sessions stay real, only "now" is later."""

    def __init__(self) -> None:
        self.offset = 0.0
        super().__init__(lambda: time.time() + self.offset)


@pytest.fixture
def sessions(seaweedfs: SeaweedFS) -> Iterator[TableSessions]:
    minted = TableSessions(seaweedfs.endpoint_url, ADMIN, region=REGION, seconds=7200, clock=MovableClock())
    try:
        yield minted
    finally:
        minted.close()


def test_a_write_session_reaches_its_table_folder_and_nothing_else(
    seaweedfs: SeaweedFS, sessions: TableSessions
) -> None:
    url = seaweedfs.endpoint_url
    assert s3_call(url, "PUT", ADMIN, "ts/b.db/t2/seed", b"theirs")[0] == 200
    session = sessions.session(BUCKET, "ts/a.db/t1", "write")
    key = AwsKey(session.access_key_id, session.secret_access_key, session.session_token)
    assert key.access_key_id != ACCESS_KEY
    assert s3_call(url, "PUT", key, "ts/a.db/t1/data/f", b"mine") == (200, "")
    assert s3_call(url, "GET", key, "ts/a.db/t1/data/f") == (200, "")
    assert s3_call(url, "GET", key, list_prefix="ts/a.db/t1/") == (200, "")
    assert s3_call(url, "HEAD", key)[0] == 200  # HeadBucket, which pyarrow asks first
    assert s3_call(url, "PUT", key, "ts/a.db/", b"")[0] == 200  # the marker pypaimon's mkdirs writes
    assert s3_call(url, "DELETE", key, "ts/a.db/t1/data/f")[0] == 204
    denied = (403, "AccessDenied")
    assert s3_call(url, "PUT", key, "ts/b.db/t2/x", b"no") == denied
    assert s3_call(url, "GET", key, "ts/b.db/t2/seed") == denied
    assert s3_call(url, "DELETE", key, "ts/b.db/t2/seed") == denied
    assert s3_call(url, "GET", key, list_prefix="ts/b.db/t2/") == denied
    assert s3_call(url, "GET", key, list_prefix="ts/a.db/t1") == denied  # would list a.db/t10/ too
    assert s3_call(url, "GET", key, list_prefix="") == denied  # the bucket's root
    assert s3_call(url, "PUT", key, "at-the-root", b"no") == denied
    assert s3_call(url, "GET", ADMIN, "ts/b.db/t2/seed") == (200, "")  # the admin key still reads it


def test_a_read_session_reads_its_table_and_writes_nothing(
    seaweedfs: SeaweedFS, sessions: TableSessions
) -> None:
    url = seaweedfs.endpoint_url
    assert s3_call(url, "PUT", ADMIN, "tr/a.db/t1/data/f", b"rows")[0] == 200
    session = sessions.session(BUCKET, "tr/a.db/t1", "read")
    key = AwsKey(session.access_key_id, session.secret_access_key, session.session_token)
    assert s3_call(url, "GET", key, "tr/a.db/t1/data/f") == (200, "")
    assert s3_call(url, "GET", key, list_prefix="tr/a.db/t1/") == (200, "")
    denied = (403, "AccessDenied")
    assert s3_call(url, "PUT", key, "tr/a.db/t1/data/g", b"no") == denied
    assert s3_call(url, "DELETE", key, "tr/a.db/t1/data/f") == denied
    assert s3_call(url, "PUT", key, "tr/a.db/", b"") == denied
    assert s3_call(url, "GET", key, list_prefix="tr/") == denied


def test_sessions_are_cached_per_folder_and_access_until_they_run_low(seaweedfs: SeaweedFS) -> None:
    clock = MovableClock()
    sessions = TableSessions(seaweedfs.endpoint_url, ADMIN, region=REGION, seconds=7200, clock=clock)
    try:
        first = sessions.session(BUCKET, "tc/a.db/t1", "write")
        # It lasts what was asked, as the store says (its Expiration, to the second).
        assert abs(first.expires_at_millis - (time.time() + 7200) * 1000) < 5000
        assert sessions.session(BUCKET, "tc/a.db/t1/", "write") == first
        assert sessions.session(BUCKET, "tc/a.db/t1", "read").access_key_id != first.access_key_id
        assert sessions.session(BUCKET, "tc/a.db/t2", "write").access_key_id != first.access_key_id
        # Kept while over an hour (and five minutes) is left, so pypaimon keeps what it gets.
        clock.offset = 7200 - renew_below(7200) - 60
        assert sessions.session(BUCKET, "tc/a.db/t1", "write") == first
        clock.offset = 7200 - renew_below(7200) + 60
        renewed = sessions.session(BUCKET, "tc/a.db/t1", "write")
        assert renewed.access_key_id != first.access_key_id
        assert abs(renewed.expires_at_millis - (time.time() + 7200) * 1000) < 5000
    finally:
        sessions.close()


def test_a_duration_outside_stss_bounds_is_clamped(seaweedfs: SeaweedFS) -> None:
    sessions = TableSessions(seaweedfs.endpoint_url, ADMIN, region=REGION, seconds=60)
    try:
        assert sessions.seconds == 900
        session = sessions.session(BUCKET, "tb/a.db/t1", "write")
        assert abs(session.expires_at_millis - (time.time() + 900) * 1000) < 5000
    finally:
        sessions.close()
    assert renew_below(43200) == 21600
    assert renew_below(7200) == 3900
    assert renew_below(900) == 450


@pytest.mark.parametrize("prefix", ["", "/", "wh/*", "wh/a.db/t?", "wh/${aws:username}"])
def test_no_policy_is_made_for_more_than_one_folder(prefix: str) -> None:
    with pytest.raises(ValueError, match="refusing"):
        table_policy(BUCKET, prefix, "write")


def test_the_policies_grant_what_the_access_says() -> None:
    write = json.loads(table_policy(BUCKET, "wh/a.db/t1/", "write"))["Statement"]
    read = json.loads(table_policy(BUCKET, "wh/a.db/t1", "read"))["Statement"]
    assert write[0]["Action"] == [
        "s3:GetObject",
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:AbortMultipartUpload",
    ]
    assert write[0]["Resource"] == ["arn:aws:s3:::bucket/wh/a.db/t1/*"]
    assert write[-1]["Resource"] == ["arn:aws:s3:::bucket/wh/", "arn:aws:s3:::bucket/wh/a.db/"]
    assert [s["Action"] for s in read] == [
        ["s3:GetObject"],
        ["s3:GetObject"],
        ["s3:ListBucket"],
        ["s3:ListBucket"],
    ]


def test_a_wrong_key_is_the_stss_refusal_a_503(seaweedfs: SeaweedFS) -> None:
    sessions = TableSessions(seaweedfs.endpoint_url, AwsKey(ACCESS_KEY, "wrong"), region=REGION, seconds=900)
    try:
        with pytest.raises(
            StorageUnavailable, match="refused AssumeRole: HTTP 403 SignatureDoesNotMatch"
        ) as refused:
            sessions.session(BUCKET, "tw/a.db/t1", "write")
        assert refused.value.retry_after_seconds == 60
    finally:
        sessions.close()


def test_an_unreachable_sts_is_a_503() -> None:
    sessions = TableSessions(f"http://127.0.0.1:{free_port()}", ADMIN, region=REGION, seconds=900)
    try:
        with pytest.raises(StorageUnavailable, match="unreachable") as down:
            sessions.session(BUCKET, "tu/a.db/t1", "write")
        assert down.value.retry_after_seconds == 5
    finally:
        sessions.close()


class _NoSts(BaseHTTPRequestHandler):
    """An S3 server that has no STS: AssumeRole is, to it, a POST on the bucket list it does not take."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b"<?xml version='1.0'?><Error><Code>MethodNotAllowed</Code></Error>"
        self.send_response(405)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_store_without_sts_is_a_501_never_a_fallback_to_the_key() -> None:
    server = HTTPServer(("127.0.0.1", 0), _NoSts)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    sessions = TableSessions(f"http://127.0.0.1:{server.server_port}", ADMIN, region=REGION, seconds=900)
    try:
        with pytest.raises(NotSupported, match=r"serves no STS .*HTTP 405 MethodNotAllowed"):
            sessions.session(BUCKET, "tn/a.db/t1", "write")
    finally:
        sessions.close()
        server.shutdown()
        server.server_close()
