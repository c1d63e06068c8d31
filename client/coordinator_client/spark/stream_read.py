"""Streaming reads of the data source: `spark.readStream.format("paimon-coordinator").load("db.t")`.

Each micro-batch delivers what the table's snapshots changed, in Paimon's streaming semantics: the whole
table at the start snapshot first (unless the start says otherwise, see stream_start), then per later
snapshot the rows of the files it adds (the coordinator's `scope=delta` plan). APPEND snapshots deliver;
COMPACT snapshots rewrite rows already delivered and are skipped; OVERWRITE snapshots are skipped as
Paimon does by default (`streaming-read-overwrite` false), so a streaming reader never sees an overwrite;
the coordinator's manifest-merge APPEND snapshots add no file and deliver nothing.

Append tables deliver their rows as inserts. Primary-key tables deliver each added file's rows unmerged,
with the kind Paimon wrote (`_VALUE_KIND`) in the `rowkind` column (+I, -U, +U, -D), which such a read
must ask for with option rowkind=true: an update or delete is then a row a consumer can apply.

Offsets and start options: stream_start. With `consumer-id`, the reader registers a coordinator consumer
when a new query starts and moves it when Spark commits a batch (measured: Spark commits a batch's end
when it plans the next batch, so the consumer stands one batch behind), so expiration never deletes a
snapshot the query has yet to read. A consumer that exists already is where a new query starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)

from coordinator_client.client import CoordinatorClient
from coordinator_client.errors import BadRequest, NotFound
from coordinator_client.models import LiveFileModel
from coordinator_client.spark.evolution import FileSchemas
from coordinator_client.spark.file_reads import for_spark, inserts, kinds_as_written, spark_arrow_schema
from coordinator_client.spark.layout import VALUE_KIND, SparkTable
from coordinator_client.spark.options import Connection, OptionError, flag
from coordinator_client.spark.row_groups import read_split
from coordinator_client.spark.source import ROWKIND
from coordinator_client.spark.splits import DEFAULT_SPLIT_SIZE, Split, plan_splits, unmerged_splits
from coordinator_client.spark.stream_start import (
    Offset,
    Position,
    StreamSettings,
    batch_end,
    latest_snapshot_id,
)

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

CONSUMER_ATTEMPTS = 3
"""Tries to register a new consumer at the start position while expiration moves the earliest snapshot."""


class ChangeReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The driver's side of a streaming read: offsets, the files of a micro-batch, the consumer."""

    def __init__(
        self, connection: Connection, layout: SparkTable, options: Mapping[str, str], schema: StructType
    ) -> None:
        self.connection = connection
        self.layout = layout
        self.settings = StreamSettings.of(options)
        if layout.has_primary_key and not flag(options, ROWKIND):
            raise OptionError(
                ROWKIND,
                f"{layout.table_id} has a primary key: a streaming read delivers its updates and deletes "
                "as rows, which mean nothing without their kind; set option('rowkind', 'true')",
            )
        self.target = spark_arrow_schema(schema)
        self.available_now: int | None = None
        """The latest snapshot when a Trigger.AvailableNow query began: no batch goes beyond it."""
        self.initial: Offset | None = None

    # ---------------------------------------------------------------- offsets

    def initialOffset(self) -> Offset:
        """Where a new query starts. Spark asks twice before the first batch (for latestOffset, then for
        the batch's start: measured), so the answer is kept: a commit in between must not move it."""
        if self.initial is None:
            with self.connection.client() as client:
                self.initial = self._start(client).offset()
        return self.initial

    def _start(self, client: CoordinatorClient) -> Position:
        """The start options' position, the consumer registered there. A consumer that exists already
        says where to go on instead, as in Paimon: a query started again without its checkpoint (or
        restarted before its first batch was committed) reads the changes from the consumer's next
        snapshot on, whatever the start options say."""
        table_id, consumer = self.layout.table_id, self.settings.consumer_id
        if consumer is None:
            return self.settings.initial(client, table_id)
        for c in client.list_consumers(table_id).consumers:
            if c.consumer_id == consumer:
                return Position(c.next_snapshot_id - 1)
        failures = 0
        while True:
            start = self.settings.initial(client, table_id)
            try:
                client.set_consumer(table_id, consumer, start.next_needed)
                return start
            except BadRequest:  # expiration took the start snapshot meanwhile: start again
                failures += 1
                if failures == CONSUMER_ATTEMPTS:
                    raise

    def prepareForTriggerAvailableNow(self) -> None:
        with self.connection.client() as client:
            self.available_now = latest_snapshot_id(client, self.layout.table_id)

    def getDefaultReadLimit(self) -> ReadLimit:
        """Spark carries only its own kinds of limit: the snapshots per batch travel as ReadMaxFiles."""
        cap = self.settings.max_snapshots
        return ReadAllAvailable() if cap is None else ReadMaxFiles(cap)

    def latestOffset(self, start: Offset, limit: ReadLimit) -> Offset:
        with self.connection.client() as client:
            latest = latest_snapshot_id(client, self.layout.table_id)
        if self.available_now is not None:
            latest = min(latest, self.available_now)
        cap = limit.max_files if isinstance(limit, ReadMaxFiles) else None
        return batch_end(start, latest, cap)

    def commit(self, end: Offset) -> None:
        """Spark has recorded every batch up to `end`: the consumer may let the snapshots before go."""
        if self.settings.consumer_id is None:
            return
        with self.connection.client() as client:
            client.set_consumer(self.layout.table_id, self.settings.consumer_id, Position.of(end).next_needed)

    # ---------------------------------------------------------------- planning a micro-batch

    def partitions(self, start: Offset, end: Offset) -> Sequence[InputPartition]:
        begin, last = Position.planned(start, end), Position.of(end).snapshot
        table_id = self.layout.table_id
        full: list[LiveFileModel] = []
        changes: list[LiveFileModel] = []
        with self.connection.client() as client:
            try:
                if begin.full:
                    with client.scan_plan(table_id, begin.snapshot) as plan:
                        full = list(plan)
                for snapshot_id in range(begin.first_change, last + 1):
                    if client.get_snapshot(table_id, snapshot_id).commit_kind == "APPEND":
                        changes += client.live_files(table_id, snapshot_id, scope="delta").files
            except NotFound as gone:
                raise RuntimeError(
                    f"{table_id}: a snapshot the streaming read has yet to read is gone ({gone}); it expired "
                    "before the query read it: give the query a consumer-id so that expiration keeps it"
                ) from gone
        # the full table as a batch read splits it (a primary-key bucket merged in its task), then the
        # changes as they were written
        splits = plan_splits(self.layout, full, DEFAULT_SPLIT_SIZE) if full else []
        return splits + unmerged_splits(changes, DEFAULT_SPLIT_SIZE)

    # ---------------------------------------------------------------- reading (on the executors)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, Split)
        layout = self.layout
        schemas = FileSchemas.load(layout, {f.schema_id for f in partition.files})
        as_written = layout.has_primary_key and not partition.merge
        for rows in read_split(partition, schemas):
            if ROWKIND in self.target.names:
                rows = rows.append_column(
                    ROWKIND, kinds_as_written(rows[VALUE_KIND]) if as_written else inserts(rows.num_rows)
                )
            yield from for_spark(rows, self.target).to_batches()
