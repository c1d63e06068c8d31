"""The clients' retry policy: which answers say the service did nothing (send again), how long to wait
before sending again, and which failures may still be running in the service (ask for the outcome)."""

from __future__ import annotations

from coordinator_client.errors import (
    ApiError,
    Conflict,
    ServerError,
    ServiceUnavailable,
    TooManyRequests,
    TransportError,
)
from coordinator_client.models import CommitOutcomeResponse, ErrorResponse

RETRY_AFTER_CAP_SECONDS = 30.0
"""A 429's or 503's Retry-After is honoured up to this many seconds."""

_GATEWAY_STATUSES = frozenset({502, 504})
"""5xx a proxy answers while the request may still be running behind it."""


def did_nothing(error: ApiError) -> bool:
    """An answer that says the service changed nothing and the same request may simply be sent again: a
    503, a 429 (the commit was refused before it queued) or a 409 LOCK_LOST."""
    lock_lost = isinstance(error, Conflict) and error.type == "LOCK_LOST"
    return lock_lost or isinstance(error, (ServiceUnavailable, TooManyRequests))


def unavailable_delay(error: ApiError, retry: int) -> float:
    """Retry-After when the answer has one, else exponential from 0.5 s; capped."""
    retry_after = error.retry_after
    wait = retry_after if retry_after is not None else 0.5 * 2 ** (retry - 1)
    return min(wait, RETRY_AFTER_CAP_SECONDS)


def may_be_in_flight(failure: TransportError | ServerError) -> bool:
    """Could the failed request still reach (or still be running in) the service?"""
    if isinstance(failure, TransportError):
        return failure.may_have_reached_service
    return failure.status_code in _GATEWAY_STATUSES


def rejected(outcome: CommitOutcomeResponse) -> Conflict:
    conflict = outcome.conflict
    message = conflict.message if conflict is not None else "the commit was rejected"
    return Conflict(409, ErrorResponse(code="COMMIT_CONFLICT", message=message, conflict=conflict))
