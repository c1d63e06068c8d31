"""POST /transactions: several tables' changes committed all or nothing."""

from __future__ import annotations

from functools import partial

from fastapi import APIRouter, Request, Response, status

from coordinator.api.auth import Writer
from coordinator.api.deps import LockThreadsDep, ServicesDep
from coordinator.api.errors import AUTH_ERRORS, COMMIT_ERRORS
from coordinator.api.forwarding import at_the_holder
from coordinator.errors import Forbidden
from coordinator.usecases.tables import split_table_id
from coordinator_client.models import TransactionRequest, TransactionResponse

router = APIRouter(prefix="/transactions", tags=["commits"], responses=AUTH_ERRORS)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=TransactionResponse,  # also when the replica holding a table's lock answers
    responses={**COMMIT_ERRORS, 200: {"model": TransactionResponse, "description": "already committed"}},
)
async def commit_transaction(
    body: TransactionRequest,
    services: ServicesDep,
    threads: LockThreadsDep,
    principal: Writer,
    request: Request,
    response: Response,
) -> TransactionResponse | Response:
    """Every table gets its snapshot(s), or none does: 201 with each table's snapshots, 200 with the
    recorded ones for a resend of the same commitUser and identifier. A conflict on any table is a 409
    whose `conflict.table` names it; no table changed then. The token must be allowed to write every
    table."""
    for i, change in enumerate(body.tables):
        database, name = split_table_id(change.table)
        if not principal.may_write(database, name):
            raise Forbidden(
                f"{principal.name} ({principal.role}) may not write to {change.table}",
                field=f"tables[{i}].table",
            )
    tables = [change.table for change in body.tables]
    commit = partial(services.committer.transaction, body)
    answer = await at_the_holder(request, threads, services, tables, commit)
    if isinstance(answer, Response):
        return answer  # the answer of the replica holding a table's lock
    if answer.deduplicated:
        response.status_code = status.HTTP_200_OK
    return answer
