"""A table's tags through Paimon's catalog API: the native tag use cases (a `tag/tag-<name>` file holding
a copy of a snapshot, recorded in the table's history). Paimon's engines create tags of a table they
loaded by writing that file themselves; these routes are for the catalog's own tag calls."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from coordinator.api.auth import Admin
from coordinator.api.deps import LockThreadsDep, ServicesDep
from coordinator.api.rest_catalog.errors import responses
from coordinator.api.rest_catalog.models import CreateTagRequest, GetTagResponse, ListTagsResponse
from coordinator.api.rest_catalog.paging import DEFAULT, MaxResults, PageToken
from coordinator.api.rest_catalog.params import TablePath, table_reader
from coordinator.errors import (
    InvalidRequest,
    LockUnavailable,
    NotSupported,
    SnapshotNotFound,
    TableNotFound,
    TagAlreadyExists,
    TagNotFound,
)
from coordinator_client.models import PRINTABLE_PATTERN, REF_NAME_PATTERN

# Every route names a table: one outside the token's grant is 403 before it is looked up.
router = APIRouter(
    prefix="/{prefix}/databases/{database}/tables/{table}/tags", dependencies=[Depends(table_reader)]
)

TagName = Annotated[str, Path(max_length=200, pattern=REF_NAME_PATTERN)]
TagPrefix = Annotated[str | None, Query(alias="tagNamePrefix", max_length=200, pattern=PRINTABLE_PATTERN)]


@router.get("", responses=responses(TableNotFound, InvalidRequest, NotSupported))
def list_tags(
    table: TablePath,
    services: ServicesDep,
    max_results: MaxResults = DEFAULT,
    page_token: PageToken = None,
    name_prefix: TagPrefix = None,
) -> ListTagsResponse:
    """Tag names in order, one page at a time (`pageToken` is the last name of the previous page)."""
    names = sorted(
        t.name
        for t in services.maintenance.list_tags(table.id)
        if t.name.startswith(name_prefix or "") and (page_token is None or t.name > page_token)
    )
    more = len(names) > max_results
    return ListTagsResponse(
        tags=names[:max_results], next_page_token=names[max_results - 1] if more else None
    )


@router.post(
    "",
    responses=responses(InvalidRequest, TableNotFound, SnapshotNotFound, TagAlreadyExists, LockUnavailable),
)
async def create_tag(
    table: TablePath, body: CreateTagRequest, services: ServicesDep, threads: LockThreadsDep, caller: Admin
) -> None:
    """Tag a retained snapshot (the latest when `snapshotId` is absent). Tags here are kept until
    deleted: a `timeRetained` is refused rather than ignored."""
    if not re.fullmatch(REF_NAME_PATTERN, body.tag_name):
        raise InvalidRequest(f"{body.tag_name!r} is not a tag name ({REF_NAME_PATTERN})", field="tagName")
    if body.time_retained is not None:
        raise InvalidRequest(
            "tags are kept until deleted; timeRetained is not supported", field="timeRetained"
        )
    try:
        await threads.run(
            services.maintenance.create_tag, table.id, body.tag_name, body.snapshot_id, actor=caller.name
        )
    except TagAlreadyExists:
        if not body.ignore_if_exists:
            raise


@router.get("/{tag}", responses=responses(TableNotFound, TagNotFound, NotSupported))
def get_tag(table: TablePath, tag: TagName, services: ServicesDep) -> GetTagResponse:
    return GetTagResponse(tag_name=tag, snapshot=services.snapshot_documents.tag(table.id, tag))


@router.delete("/{tag}", responses=responses(TableNotFound, TagNotFound, LockUnavailable))
async def delete_tag(
    table: TablePath, tag: TagName, services: ServicesDep, threads: LockThreadsDep, caller: Admin
) -> None:
    """Delete the tag and, if its snapshot has expired, the files only it kept."""
    await threads.run(services.maintenance.delete_tag, table.id, tag, actor=caller.name)
