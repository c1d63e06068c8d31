"""The one error hierarchy of the service; each error knows its HTTP status and renders as ErrorResponse.

CoordinatorError                 500  (never raised for a known condition)
├── Unauthenticated              401  no valid bearer token
├── Forbidden                    403  the token's role or grant does not cover the request
├── InvalidRequest               422  names the offending field
│   └── IdempotencyKeyReused          an Idempotency-Key sent again with another request
├── DataFileMissing              422  a file the commit adds is not on storage; its kin, a file that is
│   │                                 not what the commit says (field: the file in the body):
│   ├── DataFileSizeMismatch          of another size
│   ├── RowCountMismatch              its footer counts other rows than rowCount
│   ├── FileFormatMismatch            not of the format the table writes
│   └── SchemaMismatch                not the columns of its schema
├── TableNotFound                404
├── CommitNotFound               404
├── SnapshotNotFound             404
├── TagNotFound                  404
├── ConsumerNotFound             404
├── DatabaseNotFound             404
├── CatalogNotFound              404  a REST catalog client asked for a warehouse this service is not
├── LockNotFound                 404  a forced release of a lock nobody holds
├── RouteNotFound                404  no route has this path
├── MethodNotAllowed             405  the path has routes, none for this method (+ Allow)
├── TableAlreadyExists           409
├── LocationInUse                409  the location is, encloses or lies inside another table's folder
├── PurgeRefused                 409  purge asked for a table whose files the coordinator did not make
├── TagAlreadyExists             409
├── DatabaseAlreadyExists        409
├── CommitConflict               409  carries the structured conflict
│   └── IdentifierReused              the commitUser + identifier name a commit with other changes
├── CursorExpired                410  (events) the cursor is older than the feed's retention; names the
│                                     oldest cursor still kept
├── PayloadTooLarge              413
├── CommitQueueFull              429  + Retry-After: the commits waiting in this process would take longer
│                                     than it may make a commit wait; refused before it queued, nothing
│                                     of it written or recorded
├── NotSupported                 501  a Paimon REST catalog feature the coordinator does not serve
└── Unavailable                  503  + Retry-After: try again, nothing was half done
    ├── LockUnavailable
    ├── StorageUnavailable            the object store or filesystem failed
    ├── MetastoreUnavailable          (locks/hive_metastore.py) the Hive Metastore did not answer
    └── DatabaseUnavailable           (db/faults.py) the metadata database is down, restarting or busy

Each `code` is one of the wire contract's ErrorCode values.
"""

from __future__ import annotations

from typing import ClassVar

from coordinator_client.models import ConflictModel, ErrorCode, ErrorResponse


class CoordinatorError(Exception):
    """Root of every error the service raises on purpose."""

    status_code = 500
    code: ClassVar[ErrorCode] = "INTERNAL"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def to_response(self) -> ErrorResponse:
        """The JSON body sent to the client."""
        return ErrorResponse(code=self.code, message=self.message, field=self.field)


class Unauthenticated(CoordinatorError):
    status_code = 401
    code = "UNAUTHENTICATED"


class Forbidden(CoordinatorError):
    status_code = 403
    code = "FORBIDDEN"


class InvalidRequest(CoordinatorError):
    status_code = 422
    code: ClassVar[ErrorCode] = "INVALID_REQUEST"


class DataFileMissing(CoordinatorError):
    """A file the commit adds is not on storage.

    The errors below are its kin, and every caller treats them alike (a resend of a commit that stands
    is answered from its record, the answer is counted as invalid): the file is there but is not what
    the commit says.
    """

    status_code = 422
    code: ClassVar[ErrorCode] = "DATA_FILE_MISSING"


class DataFileSizeMismatch(DataFileMissing):
    """A file the commit adds has another size on storage than its fileSize."""

    code = "DATA_FILE_SIZE_MISMATCH"


class RowCountMismatch(DataFileMissing):
    """A file's footer counts other rows than the rowCount the commit declares."""

    code = "ROW_COUNT_MISMATCH"


class FileFormatMismatch(DataFileMissing):
    """A file is not of the format the table writes (`file.format`), by its name or its bytes, or its
    footer cannot be read."""

    code = "FILE_FORMAT_MISMATCH"


class SchemaMismatch(DataFileMissing):
    """A file's columns are not those of its schema (schemaId, or the table's current schema)."""

    code = "SCHEMA_MISMATCH"


class TableNotFound(CoordinatorError):
    status_code = 404
    code = "TABLE_NOT_FOUND"


class CommitNotFound(CoordinatorError):
    status_code = 404
    code = "COMMIT_NOT_FOUND"


class SnapshotNotFound(CoordinatorError):
    status_code = 404
    code = "SNAPSHOT_NOT_FOUND"


class TagNotFound(CoordinatorError):
    status_code = 404
    code = "TAG_NOT_FOUND"


class ConsumerNotFound(CoordinatorError):
    status_code = 404
    code = "CONSUMER_NOT_FOUND"


class ViewNotFound(CoordinatorError):
    """Paimon's REST catalog asked for a view: the coordinator keeps none. Only /v1 raises it, where
    the answer is Paimon's ErrorResponse (resourceType VIEW), so it needs no code of its own."""

    status_code = 404
    code = "NOT_FOUND"


class DatabaseNotFound(CoordinatorError):
    status_code = 404
    code = "DATABASE_NOT_FOUND"


class LockNotFound(CoordinatorError):
    """Nobody holds the lock a forced release names: there was nothing to release, nothing changed."""

    status_code = 404
    code = "LOCK_NOT_FOUND"


class DeadLetterNotFound(CoordinatorError):
    """No dead letter has the id asked for (already redelivered or dropped, or never one)."""

    status_code = 404
    code = "DEAD_LETTER_NOT_FOUND"


class RouteNotFound(CoordinatorError):
    """No route of the service has the request's path."""

    status_code = 404
    code = "NOT_FOUND"


class MethodNotAllowed(CoordinatorError):
    """The path has routes, but none for the request's method; `allowed` goes out as the Allow header."""

    status_code = 405
    code = "METHOD_NOT_ALLOWED"

    def __init__(self, message: str, *, allowed: list[str]) -> None:
        super().__init__(message)
        self.allowed = allowed


class CatalogNotFound(CoordinatorError):
    """The warehouse (or path prefix) of a REST catalog request is not this coordinator's catalog name."""

    status_code = 404
    code = "CATALOG_NOT_FOUND"


class DatabaseAlreadyExists(CoordinatorError):
    status_code = 409
    code = "DATABASE_ALREADY_EXISTS"


class TagAlreadyExists(CoordinatorError):
    status_code = 409
    code = "TAG_ALREADY_EXISTS"


class TableAlreadyExists(CoordinatorError):
    status_code = 409
    code = "TABLE_ALREADY_EXISTS"


class LocationInUse(CoordinatorError):
    """Another table owns the folder, one inside it or one around it; the message names that table."""

    status_code = 409
    code = "LOCATION_IN_USE"


class PurgeRefused(CoordinatorError):
    """A purge that could delete files the coordinator did not make, or another table's; nothing changed."""

    status_code = 409
    code = "PURGE_REFUSED"


class PayloadTooLarge(CoordinatorError):
    status_code = 413
    code = "PAYLOAD_TOO_LARGE"


class CommitQueueFull(CoordinatorError):
    """Backpressure (commit/admission.py): the commits this process has waiting would take longer to answer
    than the limit (commit_queue_max_wait_seconds, by default the lock lease), on the commit's table or
    over the whole process (`reason`). Refused at the door, before it queued: nothing of it is written or
    recorded, and the same request may be sent again after Retry-After."""

    status_code = 429
    code = "COMMIT_QUEUE_FULL"

    def __init__(self, message: str, *, retry_after_seconds: int, reason: str) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds
        self.reason = reason


class CursorExpired(CoordinatorError):
    """GET /events after a cursor whose successors retention may have deleted: resuming there could miss
    events, so the consumer is told, with the oldest cursor still kept (None: the outbox is empty)."""

    status_code = 410
    code = "CURSOR_EXPIRED"

    def __init__(self, message: str, *, oldest_cursor: int | None) -> None:
        super().__init__(message, field="after")
        self.oldest_cursor = oldest_cursor

    def to_response(self) -> ErrorResponse:
        return ErrorResponse(
            code=self.code, message=self.message, field=self.field, oldest_cursor=self.oldest_cursor
        )


class NotSupported(CoordinatorError):
    """Part of Paimon's REST catalog protocol the coordinator does not serve (branches, system tables,
    views, functions, partitions): Paimon's clients read 501 as "not implemented" and fall back or fail."""

    status_code = 501
    code = "NOT_SUPPORTED"


class CommitConflict(CoordinatorError):
    """The commit cannot apply on top of the table as it is; nothing was published."""

    status_code = 409
    code: ClassVar[ErrorCode] = "COMMIT_CONFLICT"

    def __init__(self, conflict: ConflictModel) -> None:
        super().__init__(conflict.message)
        self.conflict = conflict

    def to_response(self) -> ErrorResponse:
        return ErrorResponse(code=self.code, message=self.message, conflict=self.conflict)


class IdentifierReused(CommitConflict):
    """The commitUser and identifier name a recorded commit whose changes differ (conflict.recorded)."""

    code = "IDENTIFIER_REUSED"


class IdempotencyKeyReused(InvalidRequest):
    """An Idempotency-Key sent again with another request (the IETF idempotency-key draft: 422)."""

    code = "IDEMPOTENCY_KEY_REUSED"


class Unavailable(CoordinatorError):
    """Something the service depends on is busy or down; the answer says when to try again."""

    status_code = 503

    def __init__(self, message: str, *, retry_after_seconds: int) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class LockUnavailable(Unavailable):
    """The table lock stayed held by others for the whole acquire timeout."""

    code = "LOCK_UNAVAILABLE"


class StorageUnavailable(Unavailable):
    """The warehouse's store could not be read or written (unreachable, failing, throttling)."""

    code = "STORAGE_UNAVAILABLE"


class PathOutsideTable(InvalidRequest):
    """A path a writer sent, or one the coordinator was about to delete, does not stay inside its table
    (a name that is not bare, an external path outside the table's external roots; domain/table_paths).
    422 INVALID_REQUEST naming the entry; nothing was written or deleted, and the refusal is audited."""
