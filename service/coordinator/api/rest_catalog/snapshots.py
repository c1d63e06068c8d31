"""A table's snapshots: the latest with the table's size (every client's commit and read starts here),
one by version, the list, and rollback."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Path

from coordinator.api.deps import LockThreadsDep, ServicesDep
from coordinator.api.rest_catalog.errors import responses
from coordinator.api.rest_catalog.models import (
    GetTableSnapshotResponse,
    GetVersionSnapshotResponse,
    ListSnapshotsResponse,
    RollbackTableRequest,
    SnapshotInstant,
    TableSnapshot,
)
from coordinator.api.rest_catalog.paging import DEFAULT, MaxResults, PageToken
from coordinator.api.rest_catalog.params import TablePath, TableWriter, table_reader
from coordinator.errors import (
    CommitConflict,
    InvalidRequest,
    LockUnavailable,
    NotSupported,
    SnapshotNotFound,
    TableNotFound,
    TagNotFound,
)
from coordinator_client.models import REF_NAME_PATTERN, RollbackRequest

# Every route names a table: one outside the token's grant is 403 before it is looked up.
router = APIRouter(
    prefix="/{prefix}/databases/{database}/tables/{table}", dependencies=[Depends(table_reader)]
)

Version = Annotated[str, Path(pattern=REF_NAME_PATTERN, description="EARLIEST, LATEST, an id or a tag")]


@router.get("/snapshot", responses=responses(TableNotFound, SnapshotNotFound, NotSupported))
def latest_snapshot(table: TablePath, services: ServicesDep) -> GetTableSnapshotResponse:
    """The latest snapshot as recorded, with the table's size at it; 404 SNAPSHOT while it has none."""
    head = services.snapshot_documents.head(table.id)
    return GetTableSnapshotResponse(
        snapshot=TableSnapshot(
            snapshot=head.snapshot,
            record_count=head.record_count,
            file_size_in_bytes=head.file_bytes,
            file_count=head.file_count,
            last_file_creation_time=head.last_file_creation_millis,
        )
    )


@router.get(
    "/snapshots/{version}", responses=responses(TableNotFound, SnapshotNotFound, TagNotFound, NotSupported)
)
def snapshot_version(table: TablePath, version: Version, services: ServicesDep) -> GetVersionSnapshotResponse:
    """EARLIEST (the oldest retained), LATEST, a snapshot id, or a tag's name."""
    return GetVersionSnapshotResponse(snapshot=services.snapshot_documents.version(table.id, version))


@router.get("/snapshots", responses=responses(TableNotFound, InvalidRequest, NotSupported))
def list_snapshots(
    table: TablePath,
    services: ServicesDep,
    max_results: MaxResults = DEFAULT,
    page_token: PageToken = None,
) -> ListSnapshotsResponse:
    """The retained snapshots, newest first."""
    before = _before(page_token)
    documents, next_before = services.snapshot_documents.page(table.id, limit=max_results, before=before)
    return ListSnapshotsResponse(
        snapshots=documents, next_page_token=str(next_before) if next_before is not None else None
    )


@router.post(
    "/rollback",
    responses=responses(TableNotFound, SnapshotNotFound, TagNotFound, CommitConflict, LockUnavailable),
)
async def rollback(
    table: TablePath,
    body: RollbackTableRequest,
    services: ServicesDep,
    threads: LockThreadsDep,
    caller: TableWriter,
) -> None:
    """Make a retained snapshot or a tag the latest again (the native rollback: later snapshots and
    tags go, and the files only they referenced). With `fromSnapshot`, only while that is the latest
    (409 otherwise): the clients send it to undo a compaction they raced with."""
    instant = body.instant
    if isinstance(instant, SnapshotInstant):
        request = RollbackRequest(snapshot_id=instant.snapshot_id)
    elif re.fullmatch(REF_NAME_PATTERN, instant.tag_name):
        request = RollbackRequest(tag=instant.tag_name)
    else:
        raise TagNotFound(f"no tag {instant.tag_name!r}: not a tag name")
    await threads.run(
        services.maintenance.rollback, table.id, request, actor=caller.name, from_snapshot=body.from_snapshot
    )


def _before(page_token: str | None) -> int | None:
    if page_token is None:
        return None
    if not page_token.isdigit() or len(page_token) > 19:
        raise InvalidRequest("not a page token of this service", field="pageToken")
    return int(page_token)
