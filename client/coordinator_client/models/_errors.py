"""The body of every error answer."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from coordinator_client.models._base import _Model
from coordinator_client.models._commits import ConflictModel

ErrorCode = Literal[
    "CATALOG_NOT_FOUND",
    "COMMIT_CONFLICT",
    "COMMIT_NOT_FOUND",
    "COMMIT_QUEUE_FULL",
    "CURSOR_EXPIRED",
    "CONSUMER_NOT_FOUND",
    "DATABASE_ALREADY_EXISTS",
    "DATABASE_NOT_FOUND",
    "DATABASE_UNAVAILABLE",
    "DATA_FILE_MISSING",
    "DEAD_LETTER_NOT_FOUND",
    "DATA_FILE_SIZE_MISMATCH",
    "FILE_FORMAT_MISMATCH",
    "FORBIDDEN",
    "IDEMPOTENCY_KEY_REUSED",
    "IDENTIFIER_REUSED",
    "INTERNAL",
    "INVALID_REQUEST",
    "LOCATION_IN_USE",
    "LOCK_NOT_FOUND",
    "LOCK_UNAVAILABLE",
    "METASTORE_UNAVAILABLE",
    "METHOD_NOT_ALLOWED",
    "NOT_FOUND",
    "NOT_SUPPORTED",
    "PAYLOAD_TOO_LARGE",
    "PURGE_REFUSED",
    "ROW_COUNT_MISMATCH",
    "SCHEMA_MISMATCH",
    "SNAPSHOT_NOT_FOUND",
    "STORAGE_UNAVAILABLE",
    "TABLE_ALREADY_EXISTS",
    "TABLE_NOT_FOUND",
    "TAG_ALREADY_EXISTS",
    "TAG_NOT_FOUND",
    "UNAUTHENTICATED",
]
"""The `code` of an ErrorResponse: one per error class of the service (coordinator.errors)."""


class ErrorResponse(_Model):
    """Every 4xx/5xx body: a stable code, a message, the offending field and, on 409, the conflict."""

    code: ErrorCode
    message: str
    field: str | None = None
    conflict: ConflictModel | None = None
    oldest_cursor: int | None = Field(
        default=None, description="410 CURSOR_EXPIRED: the oldest event cursor the feed still keeps"
    )
