"""The event feed's publishers (admin): their positions, lag and failures, and the webhooks' dead letters
with a way to redeliver or drop each. Admin only: targets are internal endpoints."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response

from coordinator.api.auth import Admin
from coordinator.api.bodies import NoBody
from coordinator.api.deps import ServicesDep
from coordinator.api.errors import AUTH_ERRORS, responses
from coordinator.api.params import DEFAULT_PAGE, PageLimit
from coordinator.errors import DeadLetterNotFound
from coordinator_client.models import DeadLettersResponse, PublishersResponse, RedeliveryResponse
from coordinator_client.models._base import INT64_MAX

router = APIRouter(tags=["ops"], responses=AUTH_ERRORS)

LetterId = Annotated[int, Path(ge=1, le=INT64_MAX, description="a dead letter's id")]
PublisherFilter = Annotated[
    str | None,
    Query(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_-]+$", description="only this publisher's"),
]


@router.get("/ops/publishers")
def publishers(services: ServicesDep, _admin: Admin) -> PublishersResponse:
    """Each configured publisher (`nats`, `webhook-<name>`): the cursor it delivered through, its lag in
    events and seconds, what it delivered and how often it failed, its last error and dead letters.
    Shared by every replica (the publishers' rows are in the database)."""
    return services.publishers.status()


@router.get("/ops/dead-letters")
def dead_letters(
    services: ServicesDep, _admin: Admin, publisher: PublisherFilter = None, limit: PageLimit = DEFAULT_PAGE
) -> DeadLettersResponse:
    """Events a webhook gave up on after events_webhook_max_attempts, oldest first, each with its event."""
    return services.publishers.dead_letters(publisher, limit)


@router.post("/ops/dead-letters/{letter_id}/redeliver", responses=responses(DeadLetterNotFound))
def redeliver(
    letter_id: LetterId, services: ServicesDep, _admin: Admin, body: NoBody = None
) -> RedeliveryResponse:
    """One delivery attempt now: `delivered` true and the dead letter is gone, or false with the error
    (the dead letter stays, its attempts counted). 404 DEAD_LETTER_NOT_FOUND for an unknown id."""
    return services.publishers.redeliver(letter_id)


@router.delete(
    "/ops/dead-letters/{letter_id}",
    status_code=204,
    response_class=Response,
    responses=responses(DeadLetterNotFound),
)
def drop_dead_letter(letter_id: LetterId, services: ServicesDep, _admin: Admin) -> Response:
    """Forget a dead letter without delivering it. 404 DEAD_LETTER_NOT_FOUND for an unknown id."""
    services.publishers.drop(letter_id)
    return Response(status_code=204)
