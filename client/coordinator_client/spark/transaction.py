"""Several DataFrames written to several tables and committed together: one multi-table transaction.

    with transaction(client, commit_user="nightly-load", identifier=20240101) as tx:
        tx.write(orders, "sales.orders")
        tx.write(customers, "sales.customers", mode="overwrite", partition={"dt": "2024-01-01"})
    tx.response  # each table's snapshots

Each `tx.write` runs its Spark job as `df.write.format("paimon-coordinator")` does, but stages its commit
on the driver's machine instead of sending it. Leaving the block sends every staged commit in one
`POST /transactions`: every table gets its snapshot, or none does. An exception inside the block
commits nothing and deletes every file the block's writes put on storage.

In a `foreachBatch` function, give the query's stable commit user and the batch id as identifier: a batch
replayed after a restart finds its transaction recorded, writes nothing again and is not committed twice.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from coordinator_client.client import CoordinatorClient
from coordinator_client.errors import WriteAborted, WriteOutcomeUnknown
from coordinator_client.models import (
    BATCH_IDENTIFIER,
    CommitResponse,
    TableSnapshots,
    TransactionRequest,
    TransactionResponse,
    TransactionTableChange,
)
from coordinator_client.spark.committing import (
    decided_rejection,
    delete_files,
    first_line,
    keep_committed,
    sweep,
)
from coordinator_client.spark.source import NAME, client_options, register
from coordinator_client.spark.write import Mode, write_error, write_options
from coordinator_client.spark.write_job import StagedWrite

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class Transaction:
    """The writes of one `with transaction(...)` block; see the module's description."""

    def __init__(self, client: CoordinatorClient, commit_user: str | None, identifier: int | None) -> None:
        self._client = client
        self.commit_user = commit_user or f"spark-transaction-{uuid.uuid4()}"
        self.identifier = BATCH_IDENTIFIER if identifier is None else identifier
        self._replay = commit_user is not None and identifier is not None
        self._staging = Path(tempfile.mkdtemp(prefix="paimon-coordinator-transaction-"))
        self._tables: list[str] = []
        self._recorded: dict[str, TableSnapshots] = {}
        self.response: TransactionResponse | None = None

    def write(
        self,
        df: DataFrame,
        table: str,
        *,
        mode: Mode = "append",
        partition: Mapping[str, Any] | None = None,
        dynamic: bool = False,
        properties: Mapping[str, str] | None = None,
    ) -> None:
        """Write `df` into `table` as `write()` does; its commit waits for the end of the block.

        Raises:
            ValueError: the arguments do not fit, or the table is written twice in the block.
            WriteAborted: the Spark job failed; the files it wrote were deleted.
        """
        if table in self._tables:
            raise ValueError(f"{table} is written twice in one transaction: write its rows in one DataFrame")
        options = write_options(mode, partition, dynamic, properties)
        self._tables.append(table)
        if self._replay:
            earlier = self._client.commit_outcome(table, self.commit_user, self.identifier)
            if earlier.status == "committed":  # a replayed batch: its transaction stands already
                self._recorded[table] = TableSnapshots(table=table, snapshots=earlier.snapshots)
                return
        register(df.sparkSession)
        stage = self._staging / f"{len(self._tables):04d}.staged"
        writer = (
            df.write.format(NAME)
            .options(**client_options(self._client), **options)
            .option("commit-user", self.commit_user)
            .option("transaction", str(stage))
            .mode("overwrite" if mode == "overwrite" else "append")
        )
        try:
            writer.save(table)
        except Exception as error:
            raise write_error(error, table, self.commit_user, self.identifier, mode) from error

    def commit(self) -> TransactionResponse:
        """Send the staged writes as one transaction; settle their files as a single write does.

        Raises:
            WriteAborted: the coordinator rejected the transaction (a conflict on one table, named);
                every staged file was deleted.
            WriteOutcomeUnknown: nobody could say whether it stands; the files were kept.
        """
        staged = self._staged()
        if self._recorded:
            if staged:
                self._delete(staged)  # not committable under this identifier: nothing names them
                raise ValueError(
                    f"{self.commit_user!r}/{self.identifier} was committed before with "
                    f"{sorted(self._recorded)}, not with {[s.layout.table_id for s in staged]}"
                )
            self.response = TransactionResponse(tables=list(self._recorded.values()), deduplicated=True)
            return self.response
        if not staged:
            self.response = TransactionResponse(tables=[])
            return self.response
        request = TransactionRequest(
            commit_user=self.commit_user,
            identifier=self.identifier,
            tables=[_change(s) for s in staged],
        )
        try:
            response = self._client.commit_transaction(request)
        except BaseException as error:
            if decided_rejection(error):
                deleted = self._delete(staged)
                raise WriteAborted(
                    f"transaction {self.commit_user!r}/{self.identifier} was not committed: "
                    f"{first_line(error)}; deleted its {deleted} data file(s)",
                    deleted_files=deleted,
                ) from error
            if not isinstance(error, Exception):
                raise  # Ctrl-C: the files stay, as the transaction may stand
            kept = sum(len(s.files) for s in staged)
            raise WriteOutcomeUnknown(
                f"the outcome of transaction {self.commit_user!r}/{self.identifier} is unknown "
                f"({first_line(error)}); its {kept} data file(s) were kept. Ask "
                f"client.commit_outcome({staged[0].layout.table_id!r}, {self.commit_user!r}, "
                f"{self.identifier}): committed means every table has its rows",
                table_id=staged[0].layout.table_id,
                commit_user=self.commit_user,
                identifier=self.identifier,
                kept_files=[f.path for s in staged for f in s.files],
            ) from error
        for part, answer in zip(staged, response.tables, strict=True):
            committed = CommitResponse(snapshots=answer.snapshots, deduplicated=response.deduplicated)
            keep_committed(self._client, part.layout, committed, part.files, part.prefix)
        self.response = response
        return response

    def abort(self) -> int:
        """Commit nothing; delete every file the block's writes put on storage. Returns how many."""
        return self._delete(self._staged())

    def _staged(self) -> list[StagedWrite]:
        return [StagedWrite.read(path) for path in sorted(self._staging.glob("*.staged"))]

    @staticmethod
    def _delete(staged: list[StagedWrite]) -> int:
        deleted = 0
        for part in staged:
            deleted += delete_files(part.layout, [f.path for f in part.files])
            deleted += sweep(part.layout, part.prefix, keep=(), directories={f.directory for f in part.files})
        return deleted

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            if error is None:
                self.commit()
            else:
                self.abort()
        finally:
            shutil.rmtree(self._staging, ignore_errors=True)


def transaction(
    client: CoordinatorClient, *, commit_user: str | None = None, identifier: int | None = None
) -> Transaction:
    """A block whose writes are committed together on leaving it; see the module's description."""
    return Transaction(client, commit_user, identifier)


def _change(staged: StagedWrite) -> TransactionTableChange:
    request = staged.request
    return TransactionTableChange(
        table=staged.layout.table_id,
        messages=request.messages,
        overwrite=request.overwrite,
        properties=request.properties,
    )
