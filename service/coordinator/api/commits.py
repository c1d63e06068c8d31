"""POST/GET /tables/{id}/commits and the outcome of one commit."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from fastapi import APIRouter, BackgroundTasks, Depends, Request, Response, status

from coordinator.api.auth import Caller, TableWriter, table_reader
from coordinator.api.collection_pause import pause_collection
from coordinator.api.commit_body import read_commit_request, request_body_openapi
from coordinator.api.deps import LockThreadsDep, ServicesDep
from coordinator.api.errors import AUTH_ERRORS, COMMIT_ERRORS, TABLE_ERRORS
from coordinator.api.forwarding import at_the_holder
from coordinator.api.params import (
    DEFAULT_PAGE,
    CommitUser,
    HistoryIdentifier,
    HistoryOutcome,
    HistoryUserPrefix,
    IdempotencyKeyHeader,
    IdempotencyKeyQuery,
    Identifier,
    PageLimit,
    TableId,
)
from coordinator.db.repositories import HistoryFilter
from coordinator.services import Services
from coordinator.usecases.operations import scoped_records
from coordinator_client.models import (
    CommitHistoryResponse,
    CommitOutcomeResponse,
    CommitResponse,
)

router = APIRouter(
    prefix="/tables/{table_id}/commits",
    tags=["commits"],
    dependencies=[Depends(table_reader)],
    responses=AUTH_ERRORS,
)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=CommitResponse,  # also when the replica holding the table's lock answers (forwarded)
    responses={**COMMIT_ERRORS, 200: {"model": CommitResponse, "description": "already committed"}},
    openapi_extra=request_body_openapi(),
)
async def commit(
    table_id: TableId,
    request: Request,
    services: ServicesDep,
    threads: LockThreadsDep,
    response: Response,
    background: BackgroundTasks,
    _writer: TableWriter,
    idempotency_key: IdempotencyKeyHeader = None,
) -> CommitResponse | Response:
    """Commit a ManifestCommittable; 201 with the new snapshots, 200 with the recorded ones for a resend."""
    body = await request.body()
    resume = pause_collection(len(body))
    try:
        result = await at_the_holder(
            request,
            threads,
            services,
            [table_id],
            partial(_commit, services, table_id, body, idempotency_key),
        )
    except BaseException:
        resume()
        raise
    background.add_task(_resumed, resume)  # after the answer is sent
    if isinstance(result, Response):
        return result  # the answer of the replica holding the table's lock
    if result.deduplicated:
        response.status_code = status.HTTP_200_OK
    return result


async def _resumed(resume: Callable[[], None]) -> None:
    # async, so it runs on the event loop: a plain function would take a trip to a worker thread for
    # every commit, big or small.
    resume()


def _commit(services: Services, table_id: str, body: bytes, idempotency_key: str | None) -> CommitResponse:
    # Validated on the commit's thread: a big body would hold the event loop for as long.
    request = read_commit_request(body)
    return services.committer.commit(table_id, request, idempotency_key=idempotency_key)


@router.get("", responses=TABLE_ERRORS)
def history(
    table_id: TableId,
    services: ServicesDep,
    caller: Caller,
    limit: PageLimit = DEFAULT_PAGE,
    user_prefix: HistoryUserPrefix = None,
    identifier: HistoryIdentifier = None,
    outcome: HistoryOutcome = None,
) -> CommitHistoryResponse:
    """Newest first: who, outcome, snapshot ids, phase timings (ms) and conflict reason; searched with
    `user_prefix`, `identifier` and `outcome` (all that are given). A transaction's row names only the
    tables the token may read."""
    search = HistoryFilter(user_prefix, identifier, outcome)
    records = services.reads.commits(table_id, limit=limit, search=search)
    return CommitHistoryResponse(commits=scoped_records(records, caller.scope))


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
