"""Files are checked for what their commit says (issue 28): the schema a file was written with, its
size, row count, format and columns, read from storage before the commit is decided.

Each case of the issue is replayed through the native door (and a transaction): a file sent without its
schemaId after an ALTER lands on the current schema and pypaimon reads its new column; every file that
is not what its entry says is a 422 with its own code whose `field` is the file's place in the body,
and nothing changes: no snapshot, no history row, no file (the tree digest of the table is the same).
"""

from __future__ import annotations

import io
import uuid
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.orc as pa_orc
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from coordinator.services import Services
from coordinator.settings import Settings
from coordinator.storage.warehouse import open_warehouse
from coordinator_client.models import CommitRequest
from coordinator_client.spark.layout import arrow_type
from tests.support.commits import commit
from tests.support.databases import database_digest
from tests.support.paimon_files import (
    PaimonTable,
    create_table,
    deletion_of,
    pypaimon_rows,
    read_bytes,
    sorted_rows,
    tree_digest,
    write_bytes,
)

STORES = ("local", "s3")

FIELDS = {"dt": "STRING", "id": "BIGINT", "v": "STRING"}


def rows(ids: range, **extra: Any) -> list[dict[str, Any]]:
    return [{"dt": "a", "id": i, "v": f"v{i}", **extra} for i in ids]


def add_qty(api: TestClient, table: PaimonTable) -> PaimonTable:
    """ALTER TABLE ADD COLUMN qty INT; the table as its writers now see it (schema 1)."""
    answer = api.post(
        f"/tables/{table.id}/schema",
        json={"changes": [{"action": "addColumn", "fieldNames": ["qty"], "dataType": "INT"}]},
    )
    assert answer.status_code == 200, answer.text
    return PaimonTable(answer.json())


def file_at(table: PaimonTable, name: str) -> str:
    return f"{table.location}/{table.partition_dir({'dt': 'a'})}/bucket-0/{name}"


def write_file(table: PaimonTable, arrow: pa.Table, file_format: str, **parquet: Any) -> dict[str, Any]:
    """A data file of `arrow` in partition dt=a, bucket 0, in `file_format`; its DataFile JSON (no
    schemaId)."""
    sink = io.BytesIO()
    if file_format == "parquet":
        pq.write_table(arrow, sink, **parquet)
    elif file_format == "orc":
        pa_orc.write_table(arrow, sink)
    else:
        fields = [{"name": f.name, "type": ["null", _avro_type(f.type)]} for f in arrow.schema]
        fastavro.writer(sink, {"type": "record", "name": "record", "fields": fields}, arrow.to_pylist())
    name = f"data-{uuid.uuid4()}-0.{file_format}"
    write_bytes(file_at(table, name), sink.getvalue())
    return {"fileName": name, "fileSize": len(sink.getvalue()), "rowCount": arrow.num_rows}


def _avro_type(data_type: pa.DataType) -> str:
    return {pa.int64(): "long", pa.int32(): "int", pa.string(): "string"}[data_type]


def arrow_of(table: PaimonTable, records: list[dict[str, Any]], *, with_qty: bool = False) -> pa.Table:
    fields = [pa.field(n, arrow_type(t), t.nullable) for n, t in table.fields]
    if with_qty and "qty" not in table.types:
        fields.append(pa.field("qty", pa.int32()))
    return pa.Table.from_pylist(records, schema=pa.schema(fields))


def refused(
    api: TestClient,
    database_url: str,
    tables: list[PaimonTable],
    path: str,
    body: dict[str, Any],
) -> dict[str, Any]:
    """POST `body` to `path`; it must be a 422 that changed nothing. Returns the error body."""
    before = (database_digest(api, database_url), [tree_digest(t.location) for t in tables])
    answer = api.post(path, json=body)
    assert answer.status_code == 422, answer.text
    assert (database_digest(api, database_url), [tree_digest(t.location) for t in tables]) == before
    for table in tables:
        assert api.get(f"/tables/{table.id}").json()["latestSnapshotId"] is None
    error: dict[str, Any] = answer.json()
    return error


def one_commit(table: PaimonTable, files: list[dict[str, Any]], **body: Any) -> dict[str, Any]:
    return {
        "commitUser": f"job-{uuid.uuid4()}",
        "messages": [table.message({"dt": "a"}, newFiles=files)],
        **body,
    }


def test_a_file_sent_without_its_schema_after_an_alter_is_read_with_its_new_column(
    api: TestClient, warehouse_location: str
) -> None:
    table = create_table(api, "claims", "added", FIELDS, partitionKeys=["dt"])
    altered = add_qty(api, table)
    with_qty = rows(range(3), qty=7)
    sent = write_file(altered, arrow_of(altered, with_qty), "parquet")
    assert "schemaId" not in sent
    commit(api, altered, [altered.message(with_qty[0], newFiles=[sent])])
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(with_qty)
    [live] = api.get(f"/tables/{table.id}/files").json()["files"]
    assert live["schemaId"] == 1


def test_a_replica_that_missed_the_alter_lands_such_a_file_on_the_new_schema(
    api: TestClient, settings: Settings, warehouse_location: str
) -> None:
    table = create_table(api, "claims", "replica", FIELDS, partitionKeys=["dt"])
    other = Services.start(settings)
    try:
        other.tables.get(table.id)  # the other replica knows the table at schema 0
        altered = add_qty(api, table)
        with_qty = rows(range(2), qty=5)
        sent = write_file(altered, arrow_of(altered, with_qty), "parquet")
        request = CommitRequest.model_validate(one_commit(altered, [sent]))
        assert [s.id for s in other.committer.commit(table.id, request).snapshots] == [1]
    finally:
        other.close()
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(with_qty)


def _wrong_schema_id(api: TestClient, table: PaimonTable, good: dict[str, Any]) -> dict[str, Any]:
    return {**good, "schemaId": 5}


def _older_schema_id(api: TestClient, table: PaimonTable, good: dict[str, Any]) -> dict[str, Any]:
    altered = add_qty(api, table)
    sent = write_file(altered, arrow_of(altered, rows(range(10, 12), qty=1)), "parquet")
    return {**sent, "schemaId": 0}


def _five_rows_declared_500000(api: TestClient, table: PaimonTable, good: dict[str, Any]) -> dict[str, Any]:
    sent = write_file(table, arrow_of(table, rows(range(10, 15))), "parquet")
    return {**sent, "rowCount": 500_000}


def _orc_file(api: TestClient, table: PaimonTable, good: dict[str, Any]) -> dict[str, Any]:
    return write_file(table, arrow_of(table, rows(range(10, 12))), "orc")


def _orc_bytes_named_parquet(api: TestClient, table: PaimonTable, good: dict[str, Any]) -> dict[str, Any]:
    sent = write_file(table, arrow_of(table, rows(range(10, 12))), "orc")
    renamed = sent["fileName"].replace(".orc", ".parquet")
    write_bytes(file_at(table, renamed), read_bytes(file_at(table, sent["fileName"])))
    return {**sent, "fileName": renamed}


def _wrong_size(api: TestClient, table: PaimonTable, good: dict[str, Any]) -> dict[str, Any]:
    sent = write_file(table, arrow_of(table, rows(range(10, 12))), "parquet")
    return {**sent, "fileSize": sent["fileSize"] + 1}


def _missing(api: TestClient, table: PaimonTable, good: dict[str, Any]) -> dict[str, Any]:
    return {**good, "fileName": f"data-{uuid.uuid4()}-0.parquet"}


def _a_column_missing(api: TestClient, table: PaimonTable, good: dict[str, Any]) -> dict[str, Any]:
    sent = write_file(table, arrow_of(table, rows(range(10, 12))).drop_columns(["v"]), "parquet")
    return {**sent, "schemaId": 0}


CASES = {
    # name: (the second file of the commit, code, words of the message)
    "a schemaId that does not exist": (_wrong_schema_id, "INVALID_REQUEST", "schema 5 does not exist"),
    "a schemaId older than the file's columns": (_older_schema_id, "SCHEMA_MISMATCH", "qty"),
    "5 rows declared as 500000": (_five_rows_declared_500000, "ROW_COUNT_MISMATCH", "holds 5 rows"),
    "an orc file in a parquet table": (_orc_file, "FILE_FORMAT_MISMATCH", "not named .parquet"),
    "orc bytes named .parquet": (_orc_bytes_named_parquet, "FILE_FORMAT_MISMATCH", "an orc file"),
    "another size": (_wrong_size, "DATA_FILE_SIZE_MISMATCH", "bytes, the commit declares"),
    "a missing file": (_missing, "DATA_FILE_MISSING", "is not on storage"),
    "a file without a column of its schema": (_a_column_missing, "SCHEMA_MISMATCH", "no column v"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_file_that_is_not_what_its_commit_says_is_refused_by_its_place(
    api: TestClient, database_url: str, case: str
) -> None:
    table = create_table(api, "claims", "refused", FIELDS, partitionKeys=["dt"])
    good = {**write_file(table, arrow_of(table, rows(range(3))), "parquet"), "schemaId": 0}
    make, code, words = CASES[case]
    bad = make(api, table, good)
    error = refused(api, database_url, [table], f"/tables/{table.id}/commits", one_commit(table, [good, bad]))
    assert error["code"] == code
    suffix = ".schemaId" if code == "INVALID_REQUEST" else ""
    assert error["field"] == f"messages[0].newFiles[1]{suffix}"
    assert words in error["message"]
    assert bad["fileName"] in error["message"] or code == "INVALID_REQUEST"


def pk_table(api: TestClient) -> PaimonTable:
    return create_table(
        api,
        "claims",
        "keyed",
        FIELDS,
        partitionKeys=["dt"],
        primaryKeys=["dt", "id"],
        options={"bucket": "1"},
    )


def test_changelog_files_are_checked_the_same(api: TestClient, database_url: str) -> None:
    table = pk_table(api)
    written = rows(range(4))
    new = table.pk_file(written, first_sequence=0)
    changelog = {**table.pk_file(written, first_sequence=0), "rowCount": 40}
    body = {
        "commitUser": "cdc",
        "messages": [table.message(written[0], newFiles=[new], changelogFiles=[changelog])],
    }
    error = refused(api, database_url, [table], f"/tables/{table.id}/commits", body)
    assert (error["code"], error["field"]) == ("ROW_COUNT_MISMATCH", "messages[0].changelogFiles[0]")


def test_compacted_files_are_checked_the_same(api: TestClient, database_url: str) -> None:
    table = pk_table(api)
    written = rows(range(4))
    first = table.pk_file(written, first_sequence=0)
    commit(api, table, [table.message(written[0], newFiles=[first])])
    after = table.pk_file(written, first_sequence=0, level=1)
    wrong = {**after, "fileSize": after["fileSize"] - 1}
    compaction = table.message(written[0], compactBefore=[deletion_of(first)], compactAfter=[wrong])
    before = (database_digest(api, database_url), tree_digest(table.location))
    answer = api.post(
        f"/tables/{table.id}/commits", json={"commitUser": "compactor", "messages": [compaction]}
    )
    assert answer.status_code == 422, answer.text
    assert (answer.json()["code"], answer.json()["field"]) == (
        "DATA_FILE_SIZE_MISMATCH",
        "messages[0].compactAfter[0]",
    )
    assert (database_digest(api, database_url), tree_digest(table.location)) == before
    assert api.get(f"/tables/{table.id}").json()["latestSnapshotId"] == 1


def test_a_primary_key_file_without_its_key_columns_is_refused(api: TestClient, database_url: str) -> None:
    table = pk_table(api)
    written = rows(range(3))
    keyed = table.pk_file(written, first_sequence=0)
    plain = write_file(table, arrow_of(table, written), "parquet")  # the columns of an append table's file
    sent = {**keyed, **plain, "schemaId": 0}
    body = {"commitUser": "job", "messages": [table.message(written[0], newFiles=[sent])]}
    error = refused(api, database_url, [table], f"/tables/{table.id}/commits", body)
    assert (error["code"], error["field"]) == ("SCHEMA_MISMATCH", "messages[0].newFiles[0]")
    assert "_KEY_id" in error["message"]
    assert "_SEQUENCE_NUMBER" in error["message"]


def test_a_transaction_names_the_file_in_its_table(api: TestClient, database_url: str) -> None:
    orders = create_table(api, "claims", "orders", FIELDS, partitionKeys=["dt"])
    invoices = create_table(api, "claims", "invoices", FIELDS, partitionKeys=["dt"])
    good = write_file(orders, arrow_of(orders, rows(range(3))), "parquet")
    fine = write_file(invoices, arrow_of(invoices, rows(range(3))), "parquet")
    lying = {**write_file(invoices, arrow_of(invoices, rows(range(3, 5))), "parquet"), "rowCount": 9}
    body = {
        "commitUser": "job",
        "identifier": 1,
        "tables": [
            {"table": orders.id, "messages": [orders.message({"dt": "a"}, newFiles=[good])]},
            {"table": invoices.id, "messages": [invoices.message({"dt": "a"}, newFiles=[fine, lying])]},
        ],
    }
    error = refused(api, database_url, [orders, invoices], "/transactions", body)
    assert (error["code"], error["field"]) == ("ROW_COUNT_MISMATCH", "tables[1].messages[0].newFiles[1]")


def test_a_footer_longer_than_the_first_read_is_read_whole(api: TestClient, warehouse_location: str) -> None:
    table = create_table(api, "claims", "long_footer", FIELDS, partitionKeys=["dt"])
    written = rows(range(400))
    sent = write_file(table, arrow_of(table, written), "parquet", row_group_size=1)  # a footer of ~100 KiB
    assert (
        pq.read_metadata(io.BytesIO(read_bytes(file_at(table, sent["fileName"])))).serialized_size > 64 * 1024
    )
    lying = {**sent, "rowCount": 399}
    answer = api.post(f"/tables/{table.id}/commits", json=one_commit(table, [lying]))
    assert (answer.status_code, answer.json()["code"]) == (422, "ROW_COUNT_MISMATCH")
    commit(api, table, [table.message({"dt": "a"}, newFiles=[sent])])
    assert len(pypaimon_rows(warehouse_location, table.id)) == 400


@pytest.mark.parametrize("file_format", ["orc", "avro"])
def test_a_table_of_another_format_takes_its_files_and_refuses_parquet(
    api: TestClient, database_url: str, warehouse_location: str, file_format: str
) -> None:
    table = create_table(
        api, "claims", file_format, FIELDS, partitionKeys=["dt"], options={"file.format": file_format}
    )
    written = rows(range(3))
    parquet = write_file(table, arrow_of(table, written), "parquet")
    error = refused(api, database_url, [table], f"/tables/{table.id}/commits", one_commit(table, [parquet]))
    assert (error["code"], error["field"]) == ("FILE_FORMAT_MISMATCH", "messages[0].newFiles[0]")
    commit(
        api,
        table,
        [table.message(written[0], newFiles=[write_file(table, arrow_of(table, written), file_format)])],
    )
    assert pypaimon_rows(warehouse_location, table.id) == sorted_rows(written)


def test_a_ranged_read_answers_the_size_with_the_bytes(warehouse_location: str) -> None:
    fileio, root = open_warehouse(warehouse_location)
    data = bytes(range(256)) * 4
    fileio.write_unique(f"{root}/t/f", data)
    fileio.write_unique(f"{root}/t/empty", b"")
    tail = fileio.read_tail(f"{root}/t/f", 100)
    assert tail is not None
    assert (tail.size, tail.offset, tail.data) == (1024, 924, data[-100:])
    whole = fileio.read_tail(f"{root}/t/f", 4096)
    assert whole is not None
    assert (whole.size, whole.offset, whole.data) == (1024, 0, data)
    middle = fileio.read_range(f"{root}/t/f", 10, 5)
    assert middle is not None
    assert (middle.size, middle.offset, middle.data) == (1024, 10, data[10:15])
    empty = fileio.read_tail(f"{root}/t/empty", 100)
    assert empty is not None
    assert (empty.size, empty.data) == (0, b"")
    assert fileio.read_tail(f"{root}/t/gone", 100) is None
    assert fileio.read_range(f"{root}/t/gone", 0, 100) is None
