"""Test support for the stream reader's tests: tables, and a writer that remembers what it changed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator_client import CoordinatorClient
from coordinator_client.spark import write
from tests.support.paimon_files import create_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Change = tuple[str, int, str | None]
"""(rowkind, id, v): one delivered row."""


def stream_table(client: CoordinatorClient, name: str, primary_key: bool) -> str:
    if primary_key:
        fields = {"id": "BIGINT NOT NULL", "v": "STRING"}
        return create_table(client, "s", name, fields, primaryKeys=["id"], options={"bucket": "2"}).id
    return create_table(client, "s", name, {"id": "BIGINT", "v": "STRING"}).id


class Writer:
    """Commits changes with the functional writer and remembers what each snapshot changed."""

    def __init__(self, spark: SparkSession, client: CoordinatorClient, table: str) -> None:
        self.spark, self.client, self.table = spark, client, table
        self.changes: dict[int, list[Change]] = {}

    def commit(self, rows: list[tuple[int, str | None]], *, delete: bool = False) -> int:
        frame = self.spark.createDataFrame(rows, "id long, v string")
        answer = write(frame, self.table, client=self.client, mode="delete" if delete else "append")
        (snapshot,) = [s.id for s in answer.snapshots]
        self.changes[snapshot] = [("-D" if delete else "+I", i, v) for i, v in rows]
        return snapshot

    def between(self, after: int, last: int) -> list[Change]:
        """The changes of snapshots after..last."""
        return [c for s in range(after + 1, last + 1) for c in self.changes.get(s, [])]

    def table_at(self, snapshot: int) -> list[Change]:
        """The table at `snapshot` as inserts: newest row per key, deleted keys gone."""
        rows: dict[int, Change] = {}
        for c in self.between(0, snapshot):
            if c[0] == "-D":
                rows.pop(c[1], None)
            else:
                rows[c[1]] = c
        return list(rows.values())
