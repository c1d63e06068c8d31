"""Paimon's markDonePartitions (`partition.mark-done-action` = `mark-event`): a writer that finished
partitions tells the catalog, and the coordinator announces them on its event feed (`partition-mark`),
so downstream jobs wait on the feed instead of a `_SUCCESS` file. The rest of the partition endpoints
stay 501 (fallback.py): Paimon's clients list partitions from storage instead."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from coordinator.api.deps import LockThreadsDep, ServicesDep
from coordinator.api.rest_catalog.errors import responses
from coordinator.api.rest_catalog.models import MarkDonePartitionsRequest
from coordinator.api.rest_catalog.params import TablePath, TableWriter, table_reader
from coordinator.errors import CommitConflict, InvalidRequest, LockUnavailable, TableNotFound

router = APIRouter(
    prefix="/{prefix}/databases/{database}/tables/{table}/partitions", dependencies=[Depends(table_reader)]
)


@router.post("/mark", responses=responses(InvalidRequest, TableNotFound, LockUnavailable, CommitConflict))
async def mark_done_partitions(
    table: TablePath,
    body: MarkDonePartitionsRequest,
    services: ServicesDep,
    threads: LockThreadsDep,
    writer: TableWriter,
) -> None:
    """Mark whole partitions done: recorded in the table's history and as one event of the feed."""
    await threads.run(
        services.maintenance.mark_partitions_done,
        table.id,
        body.specs,
        actor=writer.name,
        field="specs",
        as_text=True,
    )
