"""POST {T}/commit: a snapshot a Paimon engine finished itself, published if it builds on the head.

The decision is the commit pipeline's (Committer.commit_snapshot, under the table's lock): this route
only carries the request in and the answer out. `success: false` means the table's head is not the
snapshot's base: the client rebases and proposes again, as Paimon's clients do on their own.
"""

from __future__ import annotations

from functools import partial

from fastapi import APIRouter, Depends, Request, Response
from starlette.concurrency import run_in_threadpool

from coordinator.api.deps import LockThreadsDep, ServicesDep
from coordinator.api.forwarding import at_the_holder
from coordinator.api.rest_catalog.errors import responses
from coordinator.api.rest_catalog.models import CommitTableRequest, CommitTableResponse
from coordinator.api.rest_catalog.params import TablePath, TableWriter, table_reader
from coordinator.commit.snapshot_proposals import SnapshotProposal
from coordinator.errors import (
    CommitConflict,
    CommitQueueFull,
    InvalidRequest,
    LockUnavailable,
    NotSupported,
    PathOutsideTable,
    PayloadTooLarge,
    StorageUnavailable,
    TableNotFound,
)

# Every route names a table: one outside the token's grant is 403 before it is looked up.
router = APIRouter(
    prefix="/{prefix}/databases/{database}/tables/{table}", dependencies=[Depends(table_reader)]
)


@router.post(
    "/commit",
    response_model=CommitTableResponse,  # also when the replica holding the table's lock answers
    responses=responses(
        InvalidRequest, TableNotFound, CommitConflict, PayloadTooLarge, CommitQueueFull, NotSupported,
        LockUnavailable, StorageUnavailable,
    ),
)  # fmt: skip
async def commit(
    table: TablePath,
    body: CommitTableRequest,
    services: ServicesDep,
    threads: LockThreadsDep,
    request: Request,
    writer: TableWriter,
) -> CommitTableResponse | Response:
    """`success: true` when the snapshot is published now or was already (a resend); `false` when its
    base is not the head. 404 TABLE also for a `tableId` that is not the table's uuid (it was dropped
    and created again); 409 names the files and the snapshot that won a definite conflict; 429 with
    Retry-After when the commits waiting here would take too long to answer, 503 with Retry-After when
    the table's lock or the store is busy (nothing was written either way: Paimon's clients send it
    again)."""
    proposal = SnapshotProposal(
        table_uuid=body.table_id,
        base_snapshot_uuid=body.base_snapshot_uuid,
        snapshot_json=dict(body.snapshot),
        statistics=[dict(s) for s in body.statistics],
    )
    commit = partial(services.committer.commit_snapshot, table.id, proposal)
    try:
        published = await at_the_holder(request, threads, services, [table.id], commit)
    except PathOutsideTable as refused:
        audit = services.operations.audit_path_refusal
        await run_in_threadpool(audit, writer.name, table.id, refused, "rest-commit")
        raise
    if isinstance(published, Response):
        return published  # the answer of the replica holding the table's lock
    return CommitTableResponse(success=published)
