"""CoordinatorClient and AsyncCoordinatorClient: against a real server, and against a faked network.

The real-server tests run uvicorn in a thread on a free port over a fresh SQLite database and warehouse.
The retry tests fake only the network (httpx.MockTransport) and run every scenario with both clients.
"""

from __future__ import annotations

import importlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar, get_args, get_type_hints

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import uvicorn
from pydantic import BaseModel

import coordinator_client
import coordinator_client._flows as flows
from coordinator.app import create_app
from coordinator.errors import CoordinatorError
from coordinator.settings import Settings
from coordinator_client import (
    ApiError,
    AsyncCoordinatorClient,
    BadRequest,
    CommitMessageModel,
    CommitRequest,
    CommitStateUnknown,
    Conflict,
    CoordinatorClient,
    CoordinatorClientError,
    CreateTableRequest,
    DataFileModel,
    FieldSpec,
    Forbidden,
    IdentifierReused,
    NotFound,
    ServerError,
    ServiceUnavailable,
    StreamCutOff,
    TooManyRequests,
    TransactionRequest,
    TransactionTableChange,
    TransportError,
    Unauthorized,
)
from coordinator_client.cli import main as cli_main
from coordinator_client.models import CommitKind, ErrorCode
from paimon_format.snapshot import CommitKind as FormatCommitKind
from tests.support.served import free_port

_E = TypeVar("_E", bound=Exception)

DT = "2024-01-01"
PARTITION = {"dt": DT}


# ---------------------------------------------------------------- a real server


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[str]:
    settings = Settings(database_url=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    config = uvicorn.Config(
        create_app(settings), host="127.0.0.1", port=free_port(), log_level="warning", ws="none"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="coordinator-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive(), "the server did not start"
        assert time.monotonic() < deadline, "the server did not start within 30 s"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _table_request(name: str) -> CreateTableRequest:
    return CreateTableRequest(
        database="db",
        name=name,
        fields=[FieldSpec(name="dt", type="STRING"), FieldSpec(name="v", type="BIGINT")],
        partition_keys=["dt"],
    )


def _write_file(location: str, name: str, rows: int) -> DataFileModel:
    """A real parquet file in <location>/dt=.../bucket-0/, described with its real size."""
    path = Path(location) / f"dt={DT}" / "bucket-0" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"dt": [DT] * rows, "v": list(range(rows))}), path)
    return DataFileModel(file_name=name, file_size=path.stat().st_size, row_count=rows)


def _append(user: str, identifier: int, *files: DataFileModel) -> CommitRequest:
    message = CommitMessageModel(partition=PARTITION, bucket=0, new_files=list(files))
    return CommitRequest(commit_user=user, identifier=identifier, messages=[message])


def _compact(user: str, identifier: int, before: DataFileModel, after: DataFileModel) -> CommitRequest:
    message = CommitMessageModel(
        partition=PARTITION,
        bucket=0,
        compact_before=[before],
        compact_after=[after.model_copy(update={"level": 0})],
    )
    return CommitRequest(commit_user=user, identifier=identifier, messages=[message])


def _bad_partition(user: str) -> dict[str, Any]:
    """Valid for the client's models, refused by the service (no such partition key)."""
    return {"commitUser": user, "identifier": 9, "messages": [{"partition": {"nope": DT}, "bucket": 0}]}


def test_every_method_against_a_real_server(server_url: str) -> None:
    with CoordinatorClient(server_url, timeout=60) as client:
        health = client.health()
        assert health.status == "ok"
        assert health.database == "sqlite"

        table = client.create_table(_table_request("t"))
        assert table.id == "db.t"
        assert table.schema_.partition_keys == ["dt"]
        assert table.latest_snapshot_id is None
        assert [t.id for t in client.list_tables().tables] == ["db.t"]
        assert client.get_table("db.t").uuid == table.uuid
        with pytest.raises(Conflict) as exists:
            client.create_table(_table_request("t").model_dump(by_alias=True))  # a dict works too
        assert exists.value.status_code == 409
        assert exists.value.code == "TABLE_ALREADY_EXISTS"
        assert exists.value.conflict is None
        assert exists.value.type is None

        with pytest.raises(NotFound) as missing:
            client.get_table("db.missing")
        assert missing.value.status_code == 404
        assert missing.value.code == "TABLE_NOT_FOUND"
        with pytest.raises(NotFound):
            client.latest_snapshot("db.t")  # no snapshot yet
        assert client.live_files("db.t").files == []

        # unknown -> committed, then a resend is deduplicated
        assert client.commit_outcome("db.t", "writer", 1).status == "unknown"
        f1 = _write_file(table.location, "data-1.parquet", 3)
        first = client.commit("db.t", _append("writer", 1, f1))
        assert [(s.id, s.commit_kind) for s in first.snapshots] == [(1, "APPEND")]
        assert not first.deduplicated
        outcome = client.commit_outcome("db.t", "writer", 1)
        assert outcome.status == "committed"
        assert outcome.snapshots == first.snapshots
        again = client.commit("db.t", _append("writer", 1, f1).model_dump(by_alias=True))
        assert again.deduplicated
        assert again.snapshots == first.snapshots
        second = _append("writer", 2, _write_file(table.location, "data-2.parquet", 2))
        keyed = client.commit("db.t", second, idempotency_key="key-2")
        resent = client.commit("db.t", second, idempotency_key="key-2")  # replayed by key
        assert resent.deduplicated
        assert resent.snapshots == keyed.snapshots
        with pytest.raises(BadRequest) as reused_key:  # the key with another body: the IETF draft's 422
            client.commit("db.t", _append("writer", 2), idempotency_key="key-2")
        assert reused_key.value.code == "IDEMPOTENCY_KEY_REUSED"
        assert reused_key.value.field == "Idempotency-Key"

        # compaction of data-1, then a second compaction of the same file conflicts
        f3 = _write_file(table.location, "data-3.parquet", 3)
        compacted = client.commit("db.t", _compact("compactor", 1, f1, f3))
        assert [s.commit_kind for s in compacted.snapshots] == ["COMPACT"]
        f4 = _write_file(table.location, "data-4.parquet", 3)
        with pytest.raises(Conflict) as conflict:
            client.commit("db.t", _compact("compactor", 2, f1, f4))
        assert conflict.value.status_code == 409
        assert conflict.value.conflict is not None
        assert conflict.value.conflict.type == "DELETED_FILE_MISSING"
        assert conflict.value.type == "DELETED_FILE_MISSING"
        assert "data-1.parquet" in conflict.value.conflict.files
        assert not conflict.value.retryable
        rejected = client.commit_outcome("db.t", "compactor", 2)
        assert rejected.status == "rejected"
        assert rejected.conflict is not None
        assert rejected.conflict.type == "DELETED_FILE_MISSING"

        with pytest.raises(BadRequest) as invalid:
            client.commit("db.t", _bad_partition("writer"))
        assert invalid.value.status_code == 422
        assert invalid.value.field == "messages[0].partition.nope"

        # reads
        latest = client.latest_snapshot("db.t")
        assert latest.id == 3
        assert latest.commit_kind == "COMPACT"
        assert [s.id for s in client.list_snapshots("db.t").snapshots] == [3, 2, 1]
        assert [s.id for s in client.list_snapshots("db.t", limit=1, before=3).snapshots] == [2]
        assert client.get_snapshot("db.t", 1).commit_user == "writer"
        with pytest.raises(NotFound):
            client.get_snapshot("db.t", 99)
        files = client.live_files("db.t")
        assert files.snapshot_id == 3
        assert sorted(f.file_name for f in files.files) == ["data-2.parquet", "data-3.parquet"]
        assert all(f.path.endswith(f"/dt={DT}/bucket-0/{f.file_name}") for f in files.files)
        at_one = client.live_files("db.t", snapshot=1, partition=PARTITION)
        assert [(f.file_name, f.file_size) for f in at_one.files] == [("data-1.parquet", f1.file_size)]
        assert client.live_files("db.t", partition={"dt": "1999-01-01"}).files == []
        history = client.commit_history("db.t")
        assert [(c.commit_user, c.identifier, c.outcome) for c in history.commits][:2] == [
            ("compactor", 2, "rejected"),
            ("compactor", 1, "committed"),
        ]
        assert len(client.commit_history("db.t", limit=1).commits) == 1
        assert client.locks().locks == []

        # a drop forgets the table and keeps its files; the folder registered again is never purged
        client.drop_table("db.t")
        with pytest.raises(NotFound):
            client.get_table("db.t")
        assert Path(table.location, "snapshot", "snapshot-3").is_file()
        registered = client.register_table("db", "again", table.location)
        assert registered.latest_snapshot_id == 3
        assert registered.location == table.location
        with pytest.raises(Conflict) as refused:
            client.drop_table("db.again", purge=True)
        assert (refused.value.code, refused.value.field) == ("PURGE_REFUSED", "purge")
        client.drop_table("db.again")
        assert client.list_tables().tables == []
        assert Path(table.location, "snapshot", "snapshot-3").is_file()
        # purge deletes the folder of a table the coordinator created
        purged = client.create_table(_table_request("purged"))
        client.drop_table("db.purged", purge=True)
        assert not Path(purged.location).exists()
        assert Path(table.location, "snapshot", "snapshot-3").is_file()


@pytest.mark.anyio
async def test_every_method_async_against_a_real_server(server_url: str) -> None:
    async with AsyncCoordinatorClient(server_url, timeout=60) as client:
        assert (await client.health()).status == "ok"
        table = await client.create_table(_table_request("t"))
        assert [t.id for t in (await client.list_tables()).tables] == ["db.t"]
        assert (await client.get_table("db.t")).location == table.location

        assert (await client.commit_outcome("db.t", "writer", 1)).status == "unknown"
        f1 = _write_file(table.location, "data-1.parquet", 3)
        first = await client.commit("db.t", _append("writer", 1, f1))
        assert [s.id for s in first.snapshots] == [1]
        assert (await client.commit_outcome("db.t", "writer", 1)).status == "committed"
        assert (await client.commit("db.t", _append("writer", 1, f1))).deduplicated

        f2 = _write_file(table.location, "data-2.parquet", 3)
        await client.commit("db.t", _compact("compactor", 1, f1, f2))
        with pytest.raises(Conflict) as conflict:
            await client.commit(
                "db.t", _compact("compactor", 2, f1, _write_file(table.location, "x.parquet", 1))
            )
        assert conflict.value.conflict is not None
        assert conflict.value.conflict.type == "DELETED_FILE_MISSING"
        with pytest.raises(BadRequest) as invalid:
            await client.commit("db.t", _bad_partition("writer"))
        assert invalid.value.field == "messages[0].partition.nope"
        with pytest.raises(NotFound):
            await client.get_table("db.missing")

        assert (await client.latest_snapshot("db.t")).id == 2
        assert [s.id for s in (await client.list_snapshots("db.t", limit=10, before=2)).snapshots] == [1]
        assert (await client.get_snapshot("db.t", 2)).commit_kind == "COMPACT"
        assert [f.file_name for f in (await client.live_files("db.t", partition=PARTITION)).files] == [
            "data-2.parquet"
        ]
        assert [f.file_name for f in (await client.live_files("db.t", snapshot=1)).files] == [
            "data-1.parquet"
        ]
        assert [c.outcome for c in (await client.commit_history("db.t", limit=5)).commits] == [
            "rejected",
            "committed",
            "committed",
        ]
        assert (await client.locks()).locks == []

        await client.drop_table("db.t")
        assert (await client.register_table("db", "t", table.location)).latest_snapshot_id == 2
        with pytest.raises(Conflict):  # registered: its files were found, not made
            await client.drop_table("db.t", purge=True)
        await client.drop_table("db.t")
        assert (await client.list_tables()).tables == []
        assert Path(table.location, "snapshot", "snapshot-2").is_file()


# ---------------------------------------------------------------- a faked network

BASE = "http://coordinator.test"


def _transaction(location: dict[str, str], identifier: int, *names: str) -> TransactionRequest:
    tables = [
        TransactionTableChange(
            table=table,
            messages=[
                CommitMessageModel(
                    partition=PARTITION,
                    bucket=0,
                    new_files=[_write_file(location[table], f"{name}.parquet", 2)],
                )
            ],
        )
        for table, name in zip(location, names, strict=True)
    ]
    return TransactionRequest(commit_user="loader", identifier=identifier, tables=tables)


@pytest.mark.anyio
async def test_a_transaction_through_both_clients_and_the_command(server_url: str, capsys: Any) -> None:
    with CoordinatorClient(server_url, timeout=60) as client:
        location = {client.create_table(_table_request(n)).id: "" for n in ("fact", "dim")}
        location = {t: client.get_table(t).location for t in location}
        answer = client.commit_transaction(_transaction(location, 1, "data-f1", "data-d1"))
        assert [(t.table, [s.id for s in t.snapshots]) for t in answer.tables] == [
            ("db.fact", [1]),
            ("db.dim", [1]),
        ]
        assert not answer.deduplicated
        again = client.commit_transaction(_transaction(location, 1, "data-f1", "data-d1"))
        assert again.deduplicated
        assert again.tables == answer.tables
    async with AsyncCoordinatorClient(server_url, timeout=60) as aclient:
        answer = await aclient.commit_transaction(_transaction(location, 2, "data-f2", "data-d2"))
        assert [[s.id for s in t.snapshots] for t in answer.tables] == [[2], [2]]
        bad = _transaction(location, 3, "data-f3", "data-d3").model_dump(mode="json", by_alias=True)
        bad["tables"][1]["messages"][0]["partition"] = {"nope": DT}
        with pytest.raises(ApiError) as refused:
            await aclient.commit_transaction(bad)
        assert refused.value.field == "tables[1].messages[0].partition.nope"
    body = _transaction(location, 4, "data-f4", "data-d4").model_dump_json(by_alias=True)
    assert cli_main(["--url", server_url, "transaction", body]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [[s["id"] for s in t["snapshots"]] for t in printed["tables"]] == [[3], [3]]
    with CoordinatorClient(server_url, timeout=60) as client:
        assert [client.latest_snapshot(t).id for t in location] == [3, 3]


OUTCOME_PATH = "/tables/db.t/commits/writer/7"
COMMIT = CommitRequest(commit_user="writer", identifier=7)
CREATED = {"snapshots": [{"id": 5, "commitKind": "APPEND"}], "deduplicated": False, "timings": {}}
CONFLICT = {
    "type": "DELETED_FILE_MISSING",
    "message": "data-1.parquet is not live",
    "files": ["data-1.parquet"],
    "retryable": False,
}

Reply = httpx.Response | Exception


class Network:
    """Answers requests from a script, in order, and records them."""

    def __init__(self, *script: Reply | Callable[[httpx.Request], Reply]) -> None:
        self.script = list(script)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        assert self.script, f"unexpected request {request.method} {request.url}"
        reply = self.script.pop(0)
        if callable(reply):
            reply = reply(request)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def sent(self) -> list[tuple[str, str]]:
        return [(r.method, r.url.path) for r in self.requests]

    def commit_keys(self) -> list[str | None]:
        return [r.headers.get("idempotency-key") for r in self.requests if r.method == "POST"]


def _outcome(status: str, **extra: Any) -> httpx.Response:
    return httpx.Response(200, json={"commitUser": "writer", "identifier": 7, "status": status, **extra})


def _timeout(request: httpx.Request) -> Exception:
    return httpx.ReadTimeout("timed out", request=request)


def _busy(retry_after: str | None) -> httpx.Response:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return httpx.Response(503, headers=headers, json={"code": "LOCK_UNAVAILABLE", "message": "lock busy"})


def _error(status: int, code: str, **extra: Any) -> httpx.Response:
    return httpx.Response(status, json={"code": code, "message": code.lower(), **extra})


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(flows, "COMMIT_SEND_DELAYS", (0.0, 0.0, 0.0))
    monkeypatch.setattr(flows, "OUTCOME_QUERY_DELAYS", (0.0, 0.0, 0.0))
    assert isinstance(request.param, str)
    return request.param


async def _call(mode: str, network: Network, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call `method` on a sync or an async client whose network is `network`."""
    transport = httpx.MockTransport(network)
    if mode == "sync":
        with CoordinatorClient(BASE, transport=transport, max_unavailable_retries=3) as client:
            return getattr(client, method)(*args, **kwargs)
    async with AsyncCoordinatorClient(BASE, transport=transport, max_unavailable_retries=3) as aclient:
        return await getattr(aclient, method)(*args, **kwargs)


@pytest.mark.anyio
async def test_503_is_retried_after_retry_after(mode: str) -> None:
    network = Network(_busy("0"), _busy("0"), httpx.Response(201, json=CREATED))
    result = await _call(mode, network, "commit", "db.t", COMMIT)
    assert [s.id for s in result.snapshots] == [5]
    assert not result.deduplicated
    assert network.sent() == [("POST", "/tables/db.t/commits")] * 3
    assert len(set(network.commit_keys())) == 1


@pytest.mark.anyio
async def test_503_gives_up_after_max_unavailable_retries(mode: str) -> None:
    network = Network(*[_busy("0") for _ in range(4)])
    with pytest.raises(ServiceUnavailable) as raised:
        await _call(mode, network, "health")
    assert raised.value.retry_after == 0.0
    assert raised.value.code == "LOCK_UNAVAILABLE"
    assert len(network.requests) == 4  # the first try and max_unavailable_retries=3 retries


def _queue_full(retry_after: str) -> httpx.Response:
    message = {"code": "COMMIT_QUEUE_FULL", "message": "the commits waiting would take too long"}
    return httpx.Response(429, headers={"Retry-After": retry_after}, json=message)


@pytest.mark.anyio
async def test_429_is_resent_after_retry_after_like_a_503(mode: str) -> None:
    """The service refused the commit before it queued: the same request (same key) is simply resent."""
    network = Network(_queue_full("0"), _busy("0"), httpx.Response(201, json=CREATED))
    result = await _call(mode, network, "commit", "db.t", COMMIT)
    assert [s.id for s in result.snapshots] == [5]
    assert network.sent() == [("POST", "/tables/db.t/commits")] * 3
    assert len(set(network.commit_keys())) == 1


@pytest.mark.anyio
async def test_429_gives_up_after_max_unavailable_retries(mode: str) -> None:
    network = Network(*[_queue_full("0") for _ in range(4)])
    with pytest.raises(TooManyRequests) as raised:
        await _call(mode, network, "commit", "db.t", COMMIT)
    assert (raised.value.status_code, raised.value.code) == (429, "COMMIT_QUEUE_FULL")
    assert raised.value.retry_after == 0.0
    assert len(network.requests) == 4  # 429 and 503 share the budget; never asked about as unknown


def test_a_429_waits_its_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    network = Network(_queue_full("7"), httpx.Response(201, json=CREATED))
    with CoordinatorClient(BASE, transport=httpx.MockTransport(network)) as client:
        assert [s.id for s in client.commit("db.t", COMMIT).snapshots] == [5]
    assert slept == [7.0]


def _lock_lost() -> httpx.Response:
    conflict = {"type": "LOCK_LOST", "message": "the lease ran out", "retryable": True}
    return _error(409, "COMMIT_CONFLICT", conflict=conflict)


TAG = {"name": "t1", "snapshotId": 1, "schemaId": 0, "commitTime": 0, "recordCount": 0}


@pytest.mark.anyio
async def test_lock_lost_is_resent_like_a_503(mode: str) -> None:
    """The service wrote nothing of a change whose lease ran out: commits and maintenance are resent."""
    network = Network(_lock_lost(), httpx.Response(201, json=CREATED))
    result = await _call(mode, network, "commit", "db.t", COMMIT)
    assert [s.id for s in result.snapshots] == [5]
    assert network.sent() == [("POST", "/tables/db.t/commits")] * 2
    assert len(set(network.commit_keys())) == 1
    network = Network(_lock_lost(), httpx.Response(201, json=TAG))
    tag = await _call(mode, network, "create_tag", "db.t", "t1", 1)
    assert tag.name == "t1"
    assert network.sent() == [("POST", "/tables/db.t/tags")] * 2


@pytest.mark.anyio
async def test_lock_lost_is_raised_after_max_unavailable_retries(mode: str) -> None:
    network = Network(*[_lock_lost() for _ in range(4)])
    with pytest.raises(Conflict) as raised:
        await _call(mode, network, "commit", "db.t", COMMIT)
    assert (raised.value.type, raised.value.retryable) == ("LOCK_LOST", True)
    assert len(network.requests) == 4


def test_retry_after_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    network = Network(_busy("3600"), _busy(None), httpx.Response(200, json={"now": 0, "locks": []}))
    with CoordinatorClient(BASE, transport=httpx.MockTransport(network)) as client:
        assert client.locks().locks == []
    assert slept == [flows.RETRY_AFTER_CAP_SECONDS, 1.0]  # capped; then backoff without a header


@pytest.mark.anyio
async def test_timed_out_commit_that_committed_is_not_resent(mode: str) -> None:
    network = Network(_timeout, _outcome("committed", snapshots=[{"id": 5, "commitKind": "APPEND"}]))
    result = await _call(mode, network, "commit", "db.t", COMMIT)
    assert result.deduplicated
    assert [s.id for s in result.snapshots] == [5]
    assert network.sent() == [("POST", "/tables/db.t/commits"), ("GET", OUTCOME_PATH)]
    assert network.commit_keys()[0]  # an Idempotency-Key is always sent


@pytest.mark.anyio
async def test_a_transaction_whose_answer_was_lost_is_sent_again_and_answered_from_the_record(
    mode: str,
) -> None:
    """A transaction's name does not say it is this transaction: the resend of the same body is what the
    service answers from its record."""
    answered = {
        "tables": [
            {"table": "db.t", "snapshots": [{"id": 5, "commitKind": "APPEND"}]},
            {"table": "db.u", "snapshots": [{"id": 9, "commitKind": "APPEND"}]},
        ],
        "deduplicated": True,
    }
    network = Network(_timeout, httpx.Response(200, json=answered))
    body = {"commitUser": "writer", "identifier": 7, "tables": [{"table": "db.t"}, {"table": "db.u"}]}
    result = await _call(mode, network, "commit_transaction", body)
    assert result.deduplicated
    assert [(t.table, [s.id for s in t.snapshots]) for t in result.tables] == [("db.t", [5]), ("db.u", [9])]
    assert network.sent() == [("POST", "/transactions"), ("POST", "/transactions")]
    assert network.requests[0].content == network.requests[1].content


@pytest.mark.anyio
async def test_a_lost_transaction_whose_identifier_names_other_changes_is_never_a_success(mode: str) -> None:
    """Another commit used the identifier: the resend is refused as IDENTIFIER_REUSED, raised as its own
    exception, never turned into a deduplicated answer."""
    recorded = {"commitUser": "writer", "identifier": 7, "outcome": "committed", "snapshots": []}
    reused = {
        "type": "IDENTIFIER_REUSED",
        "message": "commit writer/7 is recorded with other changes",
        "table": "db.t",
        "recorded": {**recorded, "snapshots": [{"id": 5, "commitKind": "APPEND"}]},
    }
    network = Network(_timeout, _error(409, "IDENTIFIER_REUSED", conflict=reused))
    body = {"commitUser": "writer", "identifier": 7, "tables": [{"table": "db.t"}, {"table": "db.u"}]}
    with pytest.raises(IdentifierReused) as raised:
        await _call(mode, network, "commit_transaction", body)
    assert raised.value.recorded is not None
    assert [s.id for s in raised.value.recorded.snapshots] == [5]
    assert raised.value.type == "IDENTIFIER_REUSED"
    assert network.sent() == [("POST", "/transactions"), ("POST", "/transactions")]


@pytest.mark.anyio
async def test_a_transaction_the_service_never_received_is_sent_again(mode: str) -> None:
    answered = {"tables": [{"table": "db.t", "snapshots": [{"id": 5, "commitKind": "APPEND"}]}]}
    network = Network(_timeout, httpx.Response(201, json=answered))
    body = {"commitUser": "writer", "identifier": 7, "tables": [{"table": "db.t"}]}
    result = await _call(mode, network, "commit_transaction", body)
    assert not result.deduplicated
    assert network.sent() == [("POST", "/transactions"), ("POST", "/transactions")]
    assert network.requests[0].content == network.requests[1].content


@pytest.mark.anyio
async def test_unknown_outcome_resends_with_the_same_key(mode: str) -> None:
    network = Network(_timeout, _outcome("unknown"), httpx.Response(201, json=CREATED))
    result = await _call(mode, network, "commit", "db.t", COMMIT)
    assert [s.id for s in result.snapshots] == [5]
    assert network.sent() == [
        ("POST", "/tables/db.t/commits"),
        ("GET", OUTCOME_PATH),
        ("POST", "/tables/db.t/commits"),
    ]
    first, second = network.commit_keys()
    assert first is not None
    assert first == second
    assert network.requests[0].content == network.requests[2].content


@pytest.mark.anyio
async def test_callers_idempotency_key_is_used(mode: str) -> None:
    network = Network(
        _timeout, _outcome("unknown"), httpx.Response(200, json={**CREATED, "deduplicated": True})
    )
    result = await _call(mode, network, "commit", "db.t", COMMIT.model_dump(), idempotency_key="mine")
    assert result.deduplicated
    assert network.commit_keys() == ["mine", "mine"]
    assert json.loads(network.requests[0].content)["commitUser"] == "writer"


@pytest.mark.anyio
async def test_server_error_then_rejected_raises_conflict(mode: str) -> None:
    network = Network(_error(500, "INTERNAL"), _outcome("rejected", conflict=CONFLICT))
    with pytest.raises(Conflict) as raised:
        await _call(mode, network, "commit", "db.t", COMMIT)
    assert raised.value.conflict is not None
    assert raised.value.conflict.type == "DELETED_FILE_MISSING"
    assert raised.value.type == "DELETED_FILE_MISSING"
    assert raised.value.conflict.files == ["data-1.parquet"]
    assert isinstance(raised.value.__cause__, ServerError)
    assert network.sent() == [("POST", "/tables/db.t/commits"), ("GET", OUTCOME_PATH)]


@pytest.mark.anyio
async def test_failing_outcome_query_raises_commit_state_unknown(mode: str) -> None:
    network = Network(_timeout, _error(500, "INTERNAL"), _timeout, _error(502, "BAD_GATEWAY"))
    with pytest.raises(CommitStateUnknown) as raised:
        await _call(mode, network, "commit", "db.t", COMMIT, idempotency_key="k")
    error = raised.value
    assert (error.table_id, error.commit_user, error.identifier, error.idempotency_key) == (
        "db.t",
        "writer",
        7,
        "k",
    )
    assert isinstance(error.cause, TransportError)
    assert isinstance(error.cause.cause, httpx.ReadTimeout)
    assert isinstance(error, CoordinatorClientError)
    assert network.sent() == [("POST", "/tables/db.t/commits")] + [("GET", OUTCOME_PATH)] * 3


@pytest.mark.anyio
async def test_resends_are_bounded(mode: str) -> None:
    network = Network(*[step for _ in range(3) for step in (_timeout, _outcome("unknown"))])
    with pytest.raises(CommitStateUnknown):  # the last request may still be in flight
        await _call(mode, network, "commit", "db.t", COMMIT)
    assert network.sent().count(("POST", "/tables/db.t/commits")) == 3
    assert len(set(network.commit_keys())) == 1


@pytest.mark.anyio
async def test_service_500_with_unknown_outcome_raises_server_error_after_the_resends(mode: str) -> None:
    network = Network(*[step for _ in range(3) for step in (_error(500, "INTERNAL"), _outcome("unknown"))])
    with pytest.raises(ServerError) as raised:  # the service answered: nothing is in flight
        await _call(mode, network, "commit", "db.t", COMMIT)
    assert raised.value.status_code == 500
    assert len(network.commit_keys()) == 3


@pytest.mark.anyio
async def test_unreachable_service_resends_without_asking(mode: str) -> None:
    def refused(request: httpx.Request) -> Exception:
        return httpx.ConnectError("connection refused", request=request)

    network = Network(refused, refused, httpx.Response(201, json=CREATED))
    result = await _call(mode, network, "commit", "db.t", COMMIT)
    assert [s.id for s in result.snapshots] == [5]
    assert network.sent() == [("POST", "/tables/db.t/commits")] * 3


@pytest.mark.anyio
async def test_an_earlier_timed_out_send_keeps_the_state_unknown(mode: str) -> None:
    def refused(request: httpx.Request) -> Exception:
        return httpx.ConnectError("connection refused", request=request)

    network = Network(_timeout, _outcome("unknown"), refused, refused)
    with pytest.raises(CommitStateUnknown) as raised:  # the first POST may still reach the service
        await _call(mode, network, "commit", "db.t", COMMIT)
    assert isinstance(raised.value.cause, TransportError)
    assert isinstance(raised.value.cause.cause, httpx.ConnectError)
    assert len(network.commit_keys()) == 3


@pytest.mark.anyio
async def test_an_unreachable_service_raises_transport_error_after_the_resends(mode: str) -> None:
    network = Network(*[lambda request: httpx.ConnectError("refused", request=request) for _ in range(3)])
    with pytest.raises(TransportError):  # nothing ever reached the service: the state is known
        await _call(mode, network, "commit", "db.t", COMMIT)
    assert network.sent() == [("POST", "/tables/db.t/commits")] * 3


@pytest.mark.anyio
async def test_errors_map_to_the_tree(mode: str) -> None:
    cases: list[tuple[httpx.Response, type[ApiError]]] = [
        (_error(422, "INVALID_REQUEST", field="messages[0].bucket"), BadRequest),
        (_error(413, "PAYLOAD_TOO_LARGE", field="body"), BadRequest),
        (_error(404, "TABLE_NOT_FOUND"), NotFound),
        (_error(409, "COMMIT_CONFLICT", conflict=CONFLICT), Conflict),
        (_error(500, "INTERNAL"), ServerError),
        (httpx.Response(502, text="<html>bad gateway</html>"), ServerError),
        (_error(401, "UNAUTHENTICATED"), Unauthorized),
        (_error(403, "FORBIDDEN"), Forbidden),
        (_error(405, "METHOD_NOT_ALLOWED"), ApiError),
    ]
    for response, expected in cases:
        network = Network(response)
        with pytest.raises(ApiError) as raised:
            await _call(mode, network, "get_table", "db.t")
        assert type(raised.value) is expected
        assert raised.value.status_code == response.status_code
        assert len(network.requests) == 1  # nothing but 503 and LOCK_LOST is retried for a read
    network = Network(_error(422, "INVALID_REQUEST", field="messages[0].bucket"))
    with pytest.raises(BadRequest) as bad:
        await _call(mode, network, "get_table", "db.t")
    assert bad.value.field == "messages[0].bucket"
    assert bad.value.body is not None
    assert bad.value.body.code == "INVALID_REQUEST"
    network = Network(httpx.Response(502, text="<html>bad gateway</html>"))
    with pytest.raises(ServerError) as gateway:
        await _call(mode, network, "list_tables")
    assert gateway.value.code == "HTTP_502"
    assert "bad gateway" in gateway.value.message
    assert gateway.value.body is None
    network = Network(_error(418, "TEAPOT"))
    with pytest.raises(ApiError) as unknown:
        await _call(mode, network, "get_table", "db.t")
    assert (unknown.value.code, unknown.value.message) == ("TEAPOT", "teapot")
    assert unknown.value.body is None  # not a code of the contract: no ErrorResponse, but its own code


@pytest.mark.anyio
async def test_transport_error_wraps_httpx(mode: str) -> None:
    network = Network(lambda request: httpx.ConnectError("refused", request=request))
    with pytest.raises(TransportError) as raised:
        await _call(mode, network, "health")
    assert isinstance(raised.value.cause, httpx.ConnectError)
    assert raised.value.__cause__ is raised.value.cause
    assert raised.value.method == "GET"


@pytest.mark.anyio
async def test_requests_are_built_as_the_api_expects(mode: str) -> None:
    files = b'{"snapshotId": null}\n{"fileCount": 0}\n'  # the scan plan as JSON lines
    network = Network(
        httpx.Response(200, content=files, headers={"Content-Type": "application/x-ndjson"}),
        httpx.Response(200, json={"snapshots": []}),
        httpx.Response(204),
        _outcome("unknown"),
    )
    await _call(mode, network, "live_files", "db.t", snapshot=3, partition={"dt": DT})
    await _call(mode, network, "list_snapshots", "db.t", limit=10, before=4)
    await _call(mode, network, "drop_table", "db.t", purge=False)
    await _call(mode, network, "commit_outcome", "db.t", "a user/1", 7)
    files_request, snapshots_request, drop_request, outcome_request = network.requests
    assert files_request.headers["accept"] == "application/x-ndjson"
    assert dict(files_request.url.params) == {
        "snapshot": "3",
        "partition": json.dumps({"dt": DT}).replace(" ", ""),
    }
    assert dict(snapshots_request.url.params) == {"limit": "10", "before": "4"}
    assert (drop_request.method, dict(drop_request.url.params)) == ("DELETE", {"purge": "false"})
    assert outcome_request.url.raw_path == b"/tables/db.t/commits/a%20user%2F1/7"


def _lines(*lines: object) -> httpx.Response:
    """A scan plan answered as JSON lines."""
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return httpx.Response(200, content=body, headers={"Content-Type": "application/x-ndjson"})


def _live(name: str) -> dict[str, Any]:
    return {
        "partition": {"dt": DT},
        "bucket": 0,
        "totalBuckets": 1,
        "path": f"/w/db.db/t/dt={DT}/bucket-0/{name}",
        "fileName": name,
        "fileSize": 10,
        "rowCount": 1,
        "level": 0,
        "minKey": [],
        "maxKey": [],
        "minSequenceNumber": 0,
        "maxSequenceNumber": 0,
    }


@pytest.mark.anyio
async def test_a_streamed_scan_plan_counts_only_when_it_arrives_whole(mode: str) -> None:
    whole = _lines({"snapshotId": 4}, _live("a"), _live("b"), {"fileCount": 2})
    plan = await _call(mode, Network(whole), "live_files", "db.t")
    assert (plan.snapshot_id, [f.file_name for f in plan.files]) == (4, ["a", "b"])
    cut_off = [
        [],  # not even the header
        [{"snapshotId": 4}],  # no last line
        [{"snapshotId": 4}, _live("a")],  # a file where the last line should be
        [{"snapshotId": 4}, _live("a"), {"fileCount": 2}],  # a file lost on the way
    ]
    for lines in cut_off:
        with pytest.raises(StreamCutOff):
            await _call(mode, Network(_lines(*lines)), "live_files", "db.t")
    expired = {"code": "SNAPSHOT_NOT_FOUND", "message": "snapshot 4 expired"}
    failed = _lines({"snapshotId": 4}, _live("a"), {"fileCount": 1, "error": expired, "status": 404})
    with pytest.raises(NotFound, match="expired"):
        await _call(mode, Network(failed), "live_files", "db.t")
    busy_then_empty = Network(_busy("0"), _lines({"snapshotId": None}, {"fileCount": 0}))
    assert (await _call(mode, busy_then_empty, "live_files", "db.t")).files == []
    assert len(busy_then_empty.requests) == 2  # a 503 before the stream is retried like any read
    with pytest.raises(NotFound):  # an error answer of a streamed request is read and mapped as usual
        await _call(mode, Network(_error(404, "TABLE_NOT_FOUND")), "live_files", "db.t")


# ---------------------------------------------------------------- the package


def _public_names(module: ModuleType, *, reexports: bool) -> set[str]:
    """What a caller may import from `module`: every public name that is not a submodule; for a module
    that is not a re-exporting package, only the names it defines (not what it imports)."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, ModuleType)
        and (reexports or getattr(value, "__module__", None) == module.__name__)
    }


@pytest.mark.parametrize(
    ("name", "reexports"),
    [("coordinator_client", True), ("coordinator_client.models", True), ("coordinator_client.errors", False)],
)
def test_all_is_exactly_the_public_names(name: str, reexports: bool) -> None:
    """Like httpx's tests/test_exported_members.py: nothing public is left out of __all__, nothing extra
    is in it (ruff's RUF022 keeps it sorted)."""
    module = importlib.import_module(name)
    assert len(module.__all__) == len(set(module.__all__))
    assert set(module.__all__) == _public_names(module, reexports=reexports)


def _models_in(annotation: object) -> set[type[BaseModel]]:
    """The wire models an annotation names, and the models their fields name, transitively."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        inner = (_models_in(field.annotation) for field in annotation.model_fields.values())
        return {annotation}.union(*inner)
    return set().union(*(_models_in(arg) for arg in get_args(annotation)))


@pytest.mark.parametrize("client_class", [CoordinatorClient, AsyncCoordinatorClient])
def test_every_model_and_error_a_client_uses_is_exported(client_class: type) -> None:
    methods = [m for n, m in vars(client_class).items() if callable(m) and not n.startswith("_")]
    used = set().union(*(_models_in(hint) for m in methods for hint in get_type_hints(m).values()))
    assert len(used) > 40  # the walk reaches the nested models (LockWaiterModel, TagModel...)
    assert {model.__name__ for model in used} <= set(coordinator_client.__all__)
    errors = _subclasses(CoordinatorClientError) | {CoordinatorClientError}
    assert {error.__name__ for error in errors} <= set(coordinator_client.__all__)


def _subclasses(cls: type[_E]) -> set[type[_E]]:
    direct = set(cls.__subclasses__())
    return direct.union(*(_subclasses(sub) for sub in direct))


def test_the_contracts_literals_are_the_services_values() -> None:
    """Every error code the service renders is an ErrorCode, and every ErrorCode is rendered by a class;
    CommitKind is the format's commit kinds."""
    importlib.import_module("coordinator.locks.hive_metastore")  # MetastoreUnavailable lives there
    classes = _subclasses(CoordinatorError) | {CoordinatorError}
    assert {cls.code for cls in classes} == set(get_args(ErrorCode))
    assert [kind.value for kind in FormatCommitKind] == list(get_args(CommitKind))
