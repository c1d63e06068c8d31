"""Test support: data files in Paimon's layout written with pyarrow, and pypaimon as the reader.

Writers here are independent of the service: they decide bucket and directory the way a Spark or Flink
writer would (Paimon's hash and partition naming) and describe each file as a commit message's entry.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from collections.abc import Iterable, Sequence
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import httpx
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from coordinator_client import CoordinatorClient
from coordinator_client.spark.layout import arrow_type, filesystem
from paimon_format.binary_row import encode_row
from paimon_format.bucket import bucket_of
from paimon_format.partition_path import partition_path
from paimon_format.types import parse_type
from tests.support.seaweed import pypaimon_options

if TYPE_CHECKING:
    pass

VALUE_KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}


class PaimonTable:
    """What a writer knows of a table: its folder and schema (from the coordinator's TableResponse)."""

    def __init__(self, table: dict[str, Any]) -> None:
        schema = table["schema"]
        self.id: str = table["id"]
        self.schema_id: int = schema.get("id", 0)  # the schema its files are written with
        self.location: str = table["location"]
        self._fs, self._root = filesystem(self.location)
        self.fields = [(f["name"], parse_type(f["type"])) for f in schema["fields"]]
        self.types = dict(self.fields)
        self.partition_keys: list[str] = schema["partitionKeys"]
        self.primary_keys: list[str] = schema["primaryKeys"]
        self.keys = [k for k in self.primary_keys if k not in self.partition_keys]
        self.buckets = int(schema["options"].get("bucket", "-1"))

    @property
    def path(self) -> Path:
        """The folder of a table on local disk (for the tests that look at its files directly)."""
        return Path(self.location)

    @property
    def manifest_dir(self) -> Path:
        return self.path / "manifest"

    @property
    def snapshot_dir(self) -> Path:
        return self.path / "snapshot"

    @property
    def schema_dir(self) -> Path:
        return self.path / "schema"

    def partition_dir(self, partition: dict[str, Any]) -> str:
        names = self.partition_keys
        return partition_path(names, [partition[n] for n in names], [self.types[n] for n in names])

    def bucket(self, row: dict[str, Any]) -> int:
        if self.buckets <= 0:
            return 0
        key_types = [self.types[k].not_null() for k in self.keys]
        return bucket_of(encode_row([row[k] for k in self.keys], key_types), self.buckets)

    def _write(
        self, partition: dict[str, Any], bucket: int, arrow: pa.Table, name: str | None
    ) -> dict[str, Any]:
        directory = "/".join(p for p in (self._root, self.partition_dir(partition), f"bucket-{bucket}") if p)
        file_name = name or f"data-{uuid.uuid4()}-0.parquet"  # unique per call, safe from any thread
        if isinstance(self._fs, pafs.LocalFileSystem):
            self._fs.create_dir(directory, recursive=True)  # object stores have no folders to make
        pq.write_table(arrow, f"{directory}/{file_name}", filesystem=self._fs)
        return {
            "fileName": file_name,
            "fileSize": self._fs.get_file_info(f"{directory}/{file_name}").size,
            "rowCount": arrow.num_rows,
            "schemaId": self.schema_id,
        }

    def append_file(self, rows: Sequence[dict[str, Any]], *, name: str | None = None) -> dict[str, Any]:
        """One append-table data file of rows that share a partition; returns the DataFile JSON."""
        partition = {k: rows[0][k] for k in self.partition_keys}
        schema = pa.schema([pa.field(n, arrow_type(t), t.nullable) for n, t in self.fields])
        arrow = pa.Table.from_pylist([dict(r) for r in rows], schema=schema)
        return self._write(partition, 0, arrow, name)

    def pk_file(
        self,
        rows: Sequence[dict[str, Any]],
        *,
        first_sequence: int,
        level: int = 0,
        name: str | None = None,
    ) -> dict[str, Any]:
        """One primary-key data file (one partition and bucket); rows may carry `_kind` ('-D' deletes)."""
        partition = {k: rows[0][k] for k in self.partition_keys}
        bucket = self.bucket(rows[0])
        ordered = sorted(
            ((r, first_sequence + i) for i, r in enumerate(rows)),
            key=lambda rs: ([rs[0][k] for k in self.keys], rs[1]),
        )
        columns: list[pa.Field] = [pa.field(f"_KEY_{k}", arrow_type(self.types[k]), False) for k in self.keys]
        columns += [
            pa.field("_SEQUENCE_NUMBER", pa.int64(), False),
            pa.field("_VALUE_KIND", pa.int8(), False),
        ]
        columns += [pa.field(n, arrow_type(t), t.nullable) for n, t in self.fields]
        records = []
        for row, seq in ordered:
            record = {f"_KEY_{k}": row[k] for k in self.keys}
            record["_SEQUENCE_NUMBER"] = seq
            record["_VALUE_KIND"] = VALUE_KINDS[row.get("_kind", "+I")]
            record.update({n: row.get(n) for n, _ in self.fields})
            records.append(record)
        arrow = pa.Table.from_pylist(records, schema=pa.schema(columns))
        meta = self._write(partition, bucket, arrow, name)
        seqs = [s for _, s in ordered]
        meta.update(
            minKey=[json_value(ordered[0][0][k]) for k in self.keys],
            maxKey=[json_value(ordered[-1][0][k]) for k in self.keys],
            minSequenceNumber=min(seqs),
            maxSequenceNumber=max(seqs),
            level=level,
            deleteRowCount=sum(1 for r in rows if r.get("_kind", "+I") in ("-D", "-U")),
        )
        return meta

    def append_message(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """A commit message adding one new append-table data file of `rows` (one partition)."""
        return self.message(rows[0], newFiles=[self.append_file(rows)])

    def message(self, row: dict[str, Any], **files: list[dict[str, Any]]) -> dict[str, Any]:
        """A commit message for the partition and bucket of `row`."""
        return {
            "partition": {k: json_value(row[k]) for k in self.partition_keys},
            "bucket": self.bucket(row),
            **files,
        }


def json_value(value: Any) -> Any:
    if isinstance(value, (date, Decimal)):
        return str(value)
    return value


def pypaimon_table(warehouse: Path | str, table_id: str, snapshot_id: int | None = None) -> pa.Table:
    """Every row pypaimon reads from the table (at a snapshot), through a fresh filesystem catalog."""
    from pypaimon import CatalogFactory

    table = CatalogFactory.create(pypaimon_catalog_options(str(warehouse))).get_table(table_id)
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    builder = table.new_read_builder()
    arrow: pa.Table | None = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return arrow if arrow is not None else pa.table({})


def pypaimon_catalog_options(warehouse: str) -> dict[str, str]:
    """pypaimon's filesystem catalog on `warehouse`; on S3, the store the AWS_* environment names."""
    if not warehouse.startswith("s3://"):
        return {"warehouse": warehouse}
    endpoint = os.environ["AWS_ENDPOINT_URL"].removeprefix("http://")
    return {"warehouse": warehouse, **pypaimon_options(endpoint)}


def pypaimon_rows(
    warehouse: Path | str, table_id: str, snapshot_id: int | None = None
) -> list[dict[str, Any]]:
    """Every row pypaimon reads from the table (at a snapshot), sorted for comparison."""
    return sorted_rows(pypaimon_table(warehouse, table_id, snapshot_id).to_pylist())


def sorted_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((dict(r) for r in rows), key=lambda r: tuple(str(v) for v in r.values()))


def table_request(database: str, name: str, fields: dict[str, str], **body: Any) -> dict[str, Any]:
    """The CreateTableRequest JSON of a table with these fields (name -> Paimon type)."""
    return {
        "database": database,
        "name": name,
        "fields": [{"name": n, "type": t} for n, t in fields.items()],
        **body,
    }


class Poster(Protocol):
    """Raw HTTP: a TestClient, an httpx.Client, or a wrapper that adds a token."""

    def post(self, url: str, /, *, json: Any, headers: dict[str, str] | None = ...) -> httpx.Response: ...


def create_table(
    client: Poster | CoordinatorClient,
    database: str,
    name: str,
    fields: dict[str, str],
    **body: Any,
) -> PaimonTable:
    """Create the table through the API (raw HTTP or the client package) and wrap the answer."""
    return created(client, table_request(database, name, fields, **body))


def created(client: Poster | CoordinatorClient, request: dict[str, Any]) -> PaimonTable:
    """Create the table of a CreateTableRequest (JSON), which must succeed, and wrap the answer."""
    if isinstance(client, CoordinatorClient):
        return PaimonTable(client.create_table(request).model_dump(mode="json", by_alias=True))
    response = client.post("/tables", json=request)
    assert response.status_code == 201, response.text
    return PaimonTable(response.json())


def group_by_bucket(
    table: PaimonTable, rows: Sequence[dict[str, Any]]
) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """Rows by (partition values..., bucket), as a writer routes them."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        key = (*[row[k] for k in table.partition_keys], table.bucket(row))
        groups.setdefault(key, []).append(row)
    return groups


# The order table of the HTTP conflict and group-commit tests: partitioned by dt, keyed by (dt, id).
ORDER_FIELDS = {"dt": "STRING", "id": "BIGINT", "v": "STRING"}


def pk_table_request(name: str = "orders") -> dict[str, Any]:
    """sales.<name>: a primary-key table partitioned by dt, keyed by (dt, id), in 2 buckets."""
    return table_request(
        "sales", name, ORDER_FIELDS, partitionKeys=["dt"], primaryKeys=["dt", "id"], options={"bucket": "2"}
    )


def pk_table(api: Poster, name: str = "orders") -> PaimonTable:
    """sales.<name> (pk_table_request), created."""
    return created(api, pk_table_request(name))


def rows_in_bucket(table: PaimonTable, bucket: int, ids: range, dt: str = "a") -> list[dict[str, Any]]:
    """Rows of partition `dt` with the given ids that a writer routes to `bucket`."""
    return [{"dt": dt, "id": i, "v": "x"} for i in ids if table.bucket({"dt": dt, "id": i}) == bucket]


def deletion_of(f: dict[str, Any]) -> dict[str, Any]:
    """The DataFile JSON a compaction sends to delete file `f` (what identifies it, no more)."""
    return {k: f[k] for k in ("fileName", "fileSize", "rowCount", "minKey", "maxKey", "level")}


def tree_digest(root: Path | str) -> dict[str, str]:
    """Every file under `root` (a folder or an S3 location) and the hash of its bytes, to show storage
    did not change."""
    fs, path = filesystem(str(root))
    infos = fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
    digest = {}
    for info in sorted(infos, key=lambda i: i.path):
        if info.type == pafs.FileType.File:
            with fs.open_input_stream(info.path) as f:
                digest[info.path[len(path) :].lstrip("/")] = hashlib.sha256(f.read()).hexdigest()
    return digest


# Store-neutral looks at storage: a local path or an S3 URI, through the same pyarrow filesystem the
# writers above use, so a test inspects a table the same way on either store.


def file_exists(location: str) -> bool:
    """Whether a file is at `location`."""
    fs, path = filesystem(location)
    return bool(fs.get_file_info(path).type == pafs.FileType.File)


def read_bytes(location: str) -> bytes:
    fs, path = filesystem(location)
    with fs.open_input_stream(path) as f:
        data: bytes = f.read()
        return data


def read_text(location: str) -> str:
    return read_bytes(location).decode()


def write_bytes(location: str, data: bytes) -> None:
    """Write (or replace) the file at `location`, making its folder on local disk."""
    fs, path = filesystem(location)
    if isinstance(fs, pafs.LocalFileSystem):
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(path) as f:
        f.write(data)


def delete_file(location: str) -> None:
    fs, path = filesystem(location)
    fs.delete_file(path)


def file_names(folder: str) -> list[str]:
    """The sorted names of the files directly in `folder` (none when it does not exist)."""
    fs, path = filesystem(folder)
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return sorted(i.base_name for i in infos if i.type == pafs.FileType.File)


def tree_times(root: str) -> dict[str, float]:
    """Every file under `root` (relative path) and its modification time; an S3 store keeps the time an
    object was written, so this shows a file was not rewritten as well as that it is there."""
    fs, path = filesystem(root)
    infos = fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
    return {
        i.path[len(path) :].lstrip("/"): i.mtime.timestamp() if i.mtime is not None else 0.0
        for i in infos
        if i.type == pafs.FileType.File
    }


S3_OLD_S = 3.0
"""On S3, the age that tells the files made old by `make_old` from files written after it."""


def make_old(locations: Iterable[str], seconds: float) -> float | None:
    """Make the files at `locations` older than any written after this call, for what ages files (orphan
    cleanup, idle consumers). On local disk their modification time is set `seconds` back and None is
    returned. An S3 object keeps the time it was written (to the second, on SeaweedFS) and no client can
    set it back, so on S3 this waits instead, and returns the age (S3_OLD_S) that separates the files
    written before the call from those written less than S3_OLD_S - 1 seconds after it."""
    located = [filesystem(location) for location in locations]
    if all(isinstance(fs, pafs.LocalFileSystem) for fs, _ in located):
        then = time.time() - seconds
        for _, path in located:
            os.utime(path, (then, then))
        return None
    time.sleep(S3_OLD_S + 0.5)
    return S3_OLD_S
