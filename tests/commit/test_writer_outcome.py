"""The Spark writer's commit step (`commit_written`, plain Python) against a live coordinator: it deletes
the data files it wrote only after the coordinator decided against the commit; when the answer is lost it
asks what became of the commit, and keeps the files while nobody can say.

Failures are real: the answer is held in the server after the commit stands (tests/support/held_answer.py)
past the client's timeout, the server is stopped while it holds, a real SIGINT lands while the commit request
is out, and the rejections are the coordinator's own (a moved base snapshot, an unknown partition key).
"""

from __future__ import annotations

import logging
import signal
import threading
import uuid
from typing import Any

import pytest

from coordinator.settings import Settings
from coordinator_client import (
    BadRequest,
    CommitRequest,
    Conflict,
    CoordinatorClient,
    WriteAborted,
    WriteOutcomeUnknown,
)
from coordinator_client.spark.committing import commit_written, messages
from coordinator_client.spark.data_files import WrittenFile, file_prefix
from coordinator_client.spark.layout import SparkTable
from tests.support.held_answer import HeldAnswer
from tests.support.paimon_files import PaimonTable, create_table, file_exists, pypaimon_rows
from tests.support.served import LiveServer

FIELDS = {"dt": "STRING", "id": "BIGINT"}
LOST_ANSWER_TIMEOUT = 2.0
"""The writer's client timeout in the tests where the answer is held: well below the hold."""

STORES = ("local", "s3")


class Write:
    """What a Spark write has before its commit: data files on storage under one prefix, and the request."""

    def __init__(self, client: CoordinatorClient, table: PaimonTable, rows: list[dict[str, Any]]) -> None:
        self.layout = SparkTable.of(client.get_table(table.id))
        self.prefix = file_prefix(uuid.uuid4().hex)
        self.rows = rows
        self.files: list[WrittenFile] = []
        for i, row in enumerate(rows):
            meta = table.append_file([row], name=f"{self.prefix}{i}.parquet")
            directory = f"{table.partition_dir(row)}/bucket-0"
            self.files.append(WrittenFile({"dt": row["dt"]}, 0, directory, meta))
        self.locations = [f"{table.location}/{f.path}" for f in self.files]
        self.commit_user = f"job-{uuid.uuid4().hex[:8]}"

    def request(self, **extra: Any) -> CommitRequest:
        body = {"commitUser": self.commit_user, "identifier": 7, "messages": messages(self.files, "newFiles")}
        return CommitRequest.model_validate({**body, **extra})

    def commit(self, client: CoordinatorClient, request: CommitRequest | None = None) -> Any:
        return commit_written(
            client, self.layout, request or self.request(), self.files, self.prefix, "test write"
        )

    def on_storage(self) -> list[bool]:
        return [file_exists(location) for location in self.locations]


def new_table(client: CoordinatorClient) -> PaimonTable:
    return create_table(client, "w", f"t_{uuid.uuid4().hex[:6]}", FIELDS, partitionKeys=["dt"])


def outcome_queries(caplog: pytest.LogCaptureFixture, write: Write) -> int:
    """GET /tables/{id}/commits/{commitUser}/{identifier} the server answered, from its access log."""
    tail = f"/commits/{write.commit_user}/7"
    return sum(
        1
        for r in caplog.records
        if r.name == "coordinator.access"
        and getattr(r, "path", "").endswith(tail)
        and getattr(r, "method", None) == "GET"
    )


def test_a_lost_answer_is_asked_for_and_the_files_of_the_standing_commit_stay(
    live_server: LiveServer,
    client: CoordinatorClient,
    warehouse_location: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="coordinator.access")
    table = new_table(client)
    write = Write(client, table, [{"dt": "a", "id": 1}, {"dt": "b", "id": 2}])

    with (
        HeldAnswer(live_server.services, table.id) as held,
        CoordinatorClient(live_server.url, timeout=LOST_ANSWER_TIMEOUT) as impatient,
    ):
        answer = write.commit(impatient)
        # The writer is done while the server still holds the commit's own answer.
        assert held.reached.is_set()
        assert write.on_storage() == [True, True]

    assert held.held == [1]
    assert [s.id for s in answer.snapshots] == [1]
    assert answer.deduplicated  # answered from the outcome, not from the lost answer
    assert outcome_queries(caplog, write) >= 1
    assert write.on_storage() == [True, True]
    assert pypaimon_rows(warehouse_location, table.id) == write.rows


def test_ctrl_c_while_the_commit_is_out_keeps_the_files_of_the_standing_commit(
    live_server: LiveServer, client: CoordinatorClient, warehouse_location: str
) -> None:
    table = new_table(client)
    write = Write(client, table, [{"dt": "a", "id": 1}])
    main = threading.main_thread().ident
    assert main == threading.get_ident(), "the SIGINT goes to the main thread, where the writer runs"

    def press_ctrl_c(held: HeldAnswer) -> None:
        if held.reached.wait(30):
            signal.pthread_kill(main, signal.SIGINT)

    with HeldAnswer(live_server.services, table.id) as held:
        threading.Thread(target=press_ctrl_c, args=(held,), daemon=True).start()
        with pytest.raises(KeyboardInterrupt) as interrupted:
            write.commit(client)

    notes = getattr(interrupted.value, "__notes__", None)
    if notes is not None:  # Python >= 3.11
        assert any("stands (snapshots [1])" in n for n in notes), notes
    assert write.on_storage() == [True]
    assert client.commit_outcome(table.id, write.commit_user, 7).status == "committed"
    assert pypaimon_rows(warehouse_location, table.id) == write.rows


def test_a_conflict_deletes_the_files(client: CoordinatorClient, warehouse_location: str) -> None:
    table = new_table(client)
    earlier = Write(client, table, [{"dt": "a", "id": 1}])
    earlier.commit(client)
    write = Write(client, table, [{"dt": "a", "id": 2}, {"dt": "b", "id": 3}])

    with pytest.raises(WriteAborted) as aborted:
        # Strict mode on a base that moved on: the coordinator rejects it with a 409.
        write.commit(client, write.request(baseSnapshotId=0))

    assert not isinstance(aborted.value, WriteOutcomeUnknown)
    assert isinstance(aborted.value.__cause__, Conflict)
    assert aborted.value.__cause__.type == "BASE_SNAPSHOT_MOVED"
    assert aborted.value.deleted_files == 2
    assert write.on_storage() == [False, False]
    assert earlier.on_storage() == [True]
    assert pypaimon_rows(warehouse_location, table.id) == earlier.rows


def test_invalid_input_refused_with_422_deletes_the_files(client: CoordinatorClient) -> None:
    table = new_table(client)
    write = Write(client, table, [{"dt": "a", "id": 1}])
    bad = write.request(
        messages=[{"partition": {"nope": "a"}, "bucket": 0, "newFiles": [write.files[0].meta]}]
    )

    with pytest.raises(WriteAborted) as aborted:
        write.commit(client, bad)

    assert isinstance(aborted.value.__cause__, BadRequest)
    assert aborted.value.__cause__.status_code == 422
    assert aborted.value.deleted_files == 1
    assert write.on_storage() == [False]


@pytest.mark.stores("local")  # the client's timeout and a restart are its time; nothing is deleted
def test_a_coordinator_gone_while_the_commit_is_out_keeps_the_files_and_says_the_outcome_is_unknown(
    live_server: LiveServer, client: CoordinatorClient, settings: Settings, warehouse_location: str
) -> None:
    table = new_table(client)
    write = Write(client, table, [{"dt": "a", "id": 1}])

    def stop_server(held: HeldAnswer) -> None:
        # The commit stands and waits for its answer; the coordinator stops taking connections.
        if held.reached.wait(30):
            live_server.server.should_exit = True

    with (
        HeldAnswer(live_server.services, table.id) as held,
        CoordinatorClient(live_server.url, timeout=LOST_ANSWER_TIMEOUT) as impatient,
    ):
        threading.Thread(target=stop_server, args=(held,), daemon=True).start()
        with pytest.raises(WriteOutcomeUnknown) as unknown:
            write.commit(impatient)
    live_server.thread.join(timeout=30)
    assert not live_server.thread.is_alive()

    error = unknown.value
    assert "is unknown" in str(error)
    assert "kept" in str(error)
    assert write.commit_user in str(error)
    assert (error.table_id, error.commit_user, error.identifier) == (table.id, write.commit_user, 7)
    assert error.kept_files == [f.path for f in write.files]
    assert error.deleted_files == 0
    assert write.on_storage() == [True]
    # Why the files had to stay: the commit stood and names them.
    with LiveServer(settings) as restarted, CoordinatorClient(restarted.url, timeout=60) as again:
        assert again.commit_outcome(table.id, write.commit_user, 7).status == "committed"
    assert pypaimon_rows(warehouse_location, table.id) == write.rows
