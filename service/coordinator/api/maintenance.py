"""Maintenance: schema evolution (ALTER TABLE) and table options, snapshot expiration, tags, consumers,
rollback, orphan cleanup and partition mark-done.

Admins only, but for consumers and partition marks: a streaming job that reads the table moves its own
consumer, and one that writes it marks its partitions done, so a writer token granted the table may too.
Who asked (the token's name) is recorded in the history. Listing tags and consumers is a read: whoever
may read the table.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, status

from coordinator.api.auth import Admin, TableWriter, table_reader
from coordinator.api.bodies import NoBody, SetOptionsRequest
from coordinator.api.deps import LockThreadsDep, ServicesDep
from coordinator.api.errors import AUTH_ERRORS, responses
from coordinator.api.params import RefName, TableId
from coordinator.api.tables import table_response
from coordinator.errors import (
    CommitConflict,
    ConsumerNotFound,
    InvalidRequest,
    LockUnavailable,
    SnapshotNotFound,
    TableNotFound,
    TagAlreadyExists,
    TagNotFound,
)
from coordinator_client.models import (
    AlterTableRequest,
    CleanOrphansRequest,
    CleanOrphansResponse,
    ConsumerListResponse,
    ConsumerModel,
    CreateTagRequest,
    DeleteTagResponse,
    ExpireResponse,
    MarkPartitionsRequest,
    MarkPartitionsResponse,
    RollbackRequest,
    RollbackResponse,
    SetConsumerRequest,
    TableResponse,
    TagListResponse,
    TagModel,
)

router = APIRouter(
    prefix="/tables/{table_id}",
    tags=["maintenance"],
    dependencies=[Depends(table_reader)],
    responses=AUTH_ERRORS,
)

_LOCKED = responses(TableNotFound, CommitConflict, LockUnavailable)
"""Actions that hold the table: busy past the acquire timeout (503), or fenced off it (409 LOCK_LOST)."""


@router.patch("/options", responses={**_LOCKED, **responses(InvalidRequest)})
async def set_options(
    table_id: TableId, body: SetOptionsRequest, services: ServicesDep, threads: LockThreadsDep, caller: Admin
) -> TableResponse:
    """Set and remove table options (e.g. the snapshot retention ones); writes the next schema version."""
    table = await threads.run(services.maintenance.set_options, table_id, body, actor=caller.name)
    return table_response(await threads.run(services.tables.entry, table.id))


@router.post("/schema", responses={**_LOCKED, **responses(InvalidRequest)})
async def alter_table(
    table_id: TableId, body: AlterTableRequest, services: ServicesDep, threads: LockThreadsDep, caller: Admin
) -> TableResponse:
    """Apply Paimon schema changes (add, rename, drop, move and widen columns, comments, options), all
    or none, as the next schema version; old files read the new columns as null."""
    table = await threads.run(services.maintenance.alter_table, table_id, body, actor=caller.name)
    return table_response(await threads.run(services.tables.entry, table.id))


@router.post("/expire", responses={**_LOCKED, **responses(InvalidRequest)})
async def expire(
    table_id: TableId, services: ServicesDep, threads: LockThreadsDep, caller: Admin, body: NoBody = None
) -> ExpireResponse:
    """Expire snapshots as the table's retention options allow, in batches of snapshot.expire.limit."""
    return await threads.run(services.maintenance.expire, table_id, actor=caller.name)


@router.post("/partitions/mark", responses={**_LOCKED, **responses(InvalidRequest)})
async def mark_partitions_done(
    table_id: TableId,
    body: MarkPartitionsRequest,
    services: ServicesDep,
    threads: LockThreadsDep,
    caller: TableWriter,
) -> MarkPartitionsResponse:
    """Mark whole partitions done (Paimon's partition mark-done), as the writer that finished them does:
    recorded in the history and announced on the event feed as a `partition-mark` event."""
    marked = await threads.run(
        services.maintenance.mark_partitions_done, table_id, body.partitions, actor=caller.name
    )
    return MarkPartitionsResponse(partitions=marked)


@router.get("/tags", responses=responses(TableNotFound))
def list_tags(table_id: TableId, services: ServicesDep) -> TagListResponse:
    return TagListResponse(tags=services.maintenance.list_tags(table_id))


@router.post(
    "/tags",
    status_code=status.HTTP_201_CREATED,
    responses={**_LOCKED, **responses(SnapshotNotFound, TagAlreadyExists)},
)
async def create_tag(
    table_id: TableId, body: CreateTagRequest, services: ServicesDep, threads: LockThreadsDep, caller: Admin
) -> TagModel:
    """Tag a retained snapshot (the latest by default); the tag keeps its files until it is deleted."""
    tag = services.maintenance.create_tag
    return await threads.run(tag, table_id, body.name, body.snapshot_id, actor=caller.name)


@router.delete("/tags/{name}", responses={**_LOCKED, **responses(TagNotFound)})
async def delete_tag(
    table_id: TableId, name: RefName, services: ServicesDep, threads: LockThreadsDep, caller: Admin
) -> DeleteTagResponse:
    """Delete a tag, and the files only it kept alive."""
    deleted = await threads.run(services.maintenance.delete_tag, table_id, name, actor=caller.name)
    return DeleteTagResponse(name=name, deleted=deleted)


@router.post("/rollback", responses={**_LOCKED, **responses(InvalidRequest, SnapshotNotFound, TagNotFound)})
async def rollback(
    table_id: TableId, body: RollbackRequest, services: ServicesDep, threads: LockThreadsDep, caller: Admin
) -> RollbackResponse:
    """Roll back to a retained snapshot or a tag: later snapshots and tags go, and the files only they
    referenced are deleted."""
    return await threads.run(services.maintenance.rollback, table_id, body, actor=caller.name)


@router.get("/consumers", responses=responses(TableNotFound))
def list_consumers(table_id: TableId, services: ServicesDep) -> ConsumerListResponse:
    return ConsumerListResponse(consumers=services.maintenance.list_consumers(table_id))


@router.put("/consumers/{consumer_id}", responses={**_LOCKED, **responses(InvalidRequest)})
async def set_consumer(
    table_id: TableId,
    consumer_id: RefName,
    body: SetConsumerRequest,
    services: ServicesDep,
    threads: LockThreadsDep,
    caller: TableWriter,
) -> ConsumerModel:
    """Register or move a consumer: snapshots from its nextSnapshotId on are not expired."""
    move = services.maintenance.set_consumer
    return await threads.run(move, table_id, consumer_id, body.next_snapshot_id, actor=caller.name)


@router.delete(
    "/consumers/{consumer_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={**_LOCKED, **responses(ConsumerNotFound)},
)
async def delete_consumer(
    table_id: TableId,
    consumer_id: RefName,
    services: ServicesDep,
    threads: LockThreadsDep,
    caller: TableWriter,
) -> None:
    await threads.run(services.maintenance.delete_consumer, table_id, consumer_id, actor=caller.name)


@router.post("/orphans/clean", responses=_LOCKED)
async def clean_orphans(
    table_id: TableId,
    body: CleanOrphansRequest,
    services: ServicesDep,
    threads: LockThreadsDep,
    caller: Admin,
) -> CleanOrphansResponse:
    """Delete files no retained snapshot or tag references, older than olderThanSeconds (default one
    day); with dryRun, only list them."""
    return await threads.run(services.maintenance.clean_orphans, table_id, body, actor=caller.name)
