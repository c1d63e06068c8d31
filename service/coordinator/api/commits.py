"""POST/GET /tables/{id}/commits and the outcome of one commit."""

from __future__ import annotations

from functools import partial

from fastapi import APIRouter, Depends, Request, Response, status

from coordinator.api.auth import TableWriter, reader
from coordinator.api.deps import LockThreadsDep, ServicesDep
from coordinator.api.errors import AUTH_ERRORS, COMMIT_ERRORS, TABLE_ERRORS
from coordinator.api.forwarding import at_the_holder
from coordinator.api.params import (
    DEFAULT_PAGE,
    CommitUser,
    IdempotencyKeyHeader,
    IdempotencyKeyQuery,
    Identifier,
    PageLimit,
    TableId,
)
from coordinator_client.models import (
    CommitHistoryResponse,
    CommitOutcomeResponse,
    CommitRequest,
    CommitResponse,
)

router = APIRouter(
    prefix="/tables/{table_id}/commits",
    tags=["commits"],
    dependencies=[Depends(reader)],
    responses=AUTH_ERRORS,
)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=CommitResponse,  # also when the replica holding the table's lock answers (forwarded)
    responses={**COMMIT_ERRORS, 200: {"model": CommitResponse, "description": "already committed"}},
)
async def commit(
    table_id: TableId,
    body: CommitRequest,
    request: Request,
    services: ServicesDep,
    threads: LockThreadsDep,
    response: Response,
    _writer: TableWriter,
    idempotency_key: IdempotencyKeyHeader = None,
) -> CommitResponse | Response:
    """Commit a ManifestCommittable; 201 with the new snapshots, 200 with the recorded ones for a resend."""
    commit = partial(services.committer.commit, table_id, body, idempotency_key=idempotency_key)
    result = await at_the_holder(request, threads, commit)
    if isinstance(result, Response):
        return result  # the holder's answer
    if result.deduplicated:
        response.status_code = status.HTTP_200_OK
    return result


@router.get("", responses=TABLE_ERRORS)
def history(
    table_id: TableId, services: ServicesDep, limit: PageLimit = DEFAULT_PAGE
) -> CommitHistoryResponse:
    """Newest first: who, outcome, snapshot ids, phase timings (ms) and conflict reason."""
    return CommitHistoryResponse(commits=services.reads.commits(table_id, limit=limit))


@router.get("/{commit_user}/{identifier}", responses=TABLE_ERRORS)
def outcome(
    table_id: TableId,
    commit_user: CommitUser,
    identifier: Identifier,
    services: ServicesDep,
    idempotency_key: IdempotencyKeyQuery = None,
) -> CommitOutcomeResponse:
    """committed, rejected, or unknown (the service never received it): how a client resolves a timeout.

    Pass the request's `idempotencyKey` to ask about that very request.
    """
    return services.reads.outcome(table_id, commit_user, identifier, idempotency_key)
