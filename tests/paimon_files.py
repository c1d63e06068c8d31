"""Test support: data files in Paimon's layout written with pyarrow, and pypaimon as the reader.

Writers here are independent of the service: they decide bucket and directory the way a Spark or Flink
writer would (Paimon's hash and partition naming) and describe each file as a commit message's entry.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from coordinator_client.format.binary_row import encode_row
from coordinator_client.format.bucket import bucket_of
from coordinator_client.format.partition_path import partition_path
from coordinator_client.format.types import parse_type
from coordinator_client.spark.layout import arrow_type

VALUE_KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}


class PaimonTable:
    """What a writer knows of a table: its folder and schema (from the coordinator's TableResponse)."""

    def __init__(self, table: dict[str, Any]) -> None:
        schema = table["schema"]
        self.id: str = table["id"]
        self.location = Path(table["location"])
        self.fields = [(f["name"], parse_type(f["type"])) for f in schema["fields"]]
        self.types = dict(self.fields)
        self.partition_keys: list[str] = schema["partitionKeys"]
        self.primary_keys: list[str] = schema["primaryKeys"]
        self.keys = [k for k in self.primary_keys if k not in self.partition_keys]
        self.buckets = int(schema["options"].get("bucket", "-1"))

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
        directory = self.location / self.partition_dir(partition) / f"bucket-{bucket}"
        directory.mkdir(parents=True, exist_ok=True)
        file_name = name or f"data-{uuid.uuid4()}-0.parquet"  # unique per call, safe from any thread
        pq.write_table(arrow, directory / file_name)
        return {
            "fileName": file_name,
            "fileSize": (directory / file_name).stat().st_size,
            "rowCount": arrow.num_rows,
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


def pypaimon_rows(warehouse: Path, table_id: str, snapshot_id: int | None = None) -> list[dict[str, Any]]:
    """Every row pypaimon reads from the table (at a snapshot), sorted for comparison."""
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": str(warehouse)}).get_table(table_id)
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    builder = table.new_read_builder()
    arrow = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    rows = arrow.to_pylist() if arrow is not None else []
    return sorted(rows, key=lambda r: tuple(str(v) for v in r.values()))


def sorted_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((dict(r) for r in rows), key=lambda r: tuple(str(v) for v in r.values()))


def create_table(client: Any, database: str, name: str, fields: dict[str, str], **body: Any) -> PaimonTable:
    """POST /tables and wrap the answer; `client` is a TestClient or an httpx.Client."""
    payload = {
        "database": database,
        "name": name,
        "fields": [{"name": n, "type": t} for n, t in fields.items()],
        **body,
    }
    response = client.post("/tables", json=payload)
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
