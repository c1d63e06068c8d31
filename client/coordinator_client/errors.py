"""The client's exceptions: one tree, so callers can catch as broadly or as narrowly as they need.

    CoordinatorClientError
    ├── TransportError            no answer: connection failure, timeout (wraps the httpx error)
    ├── ApiError                  the service answered with an error status (status_code, code, message,
    │   │                         field, and body: the ErrorResponse, None when the answer is not one)
    │   ├── BadRequest            400, 413, 422: the request is invalid; `field` names the culprit
    │   ├── Unauthorized          401: no bearer token, or an unknown or revoked one
    │   ├── Forbidden             403: the token's role or grant does not cover the request
    │   ├── NotFound              404: no such table, snapshot, commit, tag or consumer
    │   ├── Conflict              409: a commit conflict (`conflict`, its `type` and `retryable`), an
    │   │   │                     existing table or tag, a location in use, or a refused purge
    │   │   └── IdentifierReused  the commitUser + identifier name a recorded commit with other changes
    │   │                         (`recorded`): this commit was not written
    │   ├── TooManyRequests       429: the service did nothing, refusing the commit before it queued (the
    │   │                         commits waiting there would take too long); `retry_after` seconds
    │   ├── ServiceUnavailable    503: the service did nothing (table lock busy, Hive Metastore down);
    │   │                         `retry_after` seconds
    │   └── ServerError           any other 5xx
    ├── CommitStateUnknown        a commit's outcome could not be determined even after asking the service
    ├── StreamCutOff              a streamed answer (the scan plan) ended before its last line
    └── WriteAborted              a Spark write or compaction did not commit; its files were deleted
        └── WriteOutcomeUnknown   nobody could say whether it committed; its files were kept

Within a class, `code` (an ErrorCode of the wire contract) tells the cases apart (e.g. TAG_NOT_FOUND from
TABLE_NOT_FOUND, TAG_ALREADY_EXISTS from COMMIT_CONFLICT). Other statuses (e.g. 405) raise a plain
ApiError; an answer that is not an ErrorResponse keeps its own code, or gets HTTP_<status>. Invalid request
*models* are rejected before anything is sent, with pydantic's ValidationError.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping, Sequence

import httpx
from pydantic import ValidationError

from coordinator_client.models import ConflictModel, ConflictType, ErrorResponse, RecordedCommitModel

__all__ = [
    "ApiError",
    "BadRequest",
    "CommitStateUnknown",
    "Conflict",
    "CoordinatorClientError",
    "Forbidden",
    "IdentifierReused",
    "NotFound",
    "ServerError",
    "ServiceUnavailable",
    "StreamCutOff",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "WriteAborted",
    "WriteOutcomeUnknown",
    "api_error",
    "reported_error",
]


class CoordinatorClientError(Exception):
    """Root of every error the client raises on purpose."""


class TransportError(CoordinatorClientError):
    """No answer from the service: the connection failed or timed out (`__cause__` is the httpx error)."""

    def __init__(self, message: str, *, method: str, url: str, cause: httpx.TransportError) -> None:
        super().__init__(message)
        self.method = method
        self.url = url
        self.cause = cause
        self.__cause__ = cause

    @classmethod
    def wrap(cls, error: httpx.TransportError, *, method: str, url: str) -> TransportError:
        detail = str(error) or type(error).__name__
        return cls(f"{method} {url}: {type(error).__name__}: {detail}", method=method, url=url, cause=error)

    @property
    def may_have_reached_service(self) -> bool:
        """False only when the request certainly never left: the connection could not be opened."""
        return not isinstance(self.cause, (httpx.ConnectError, httpx.ConnectTimeout))


class ApiError(CoordinatorClientError):
    """The service answered with an error status.

    `body` is the ErrorResponse; None when the answer was not one (a proxy's error page, or a code this
    client does not know). `code` and `message` are then the answer's own when it has them, else
    HTTP_<status> and the start of its text.
    """

    def __init__(
        self,
        status_code: int,
        body: ErrorResponse | None,
        *,
        headers: Mapping[str, str] | None = None,
        code: str | None = None,
        message: str | None = None,
    ) -> None:
        self.status_code = status_code
        self.body = body
        self.headers = httpx.Headers(headers)
        self.code: str = code or (body.code if body is not None else f"HTTP_{status_code}")
        self.message: str = message or (body.message if body is not None else "no body")
        super().__init__(f"{status_code} {self.code}: {self.message}")

    @property
    def field(self) -> str | None:
        return self.body.field if self.body is not None else None

    @property
    def retry_after(self) -> float | None:
        """The Retry-After header in seconds (429 and 503 carry one); None when absent or unreadable."""
        return _parse_retry_after(self.headers.get("retry-after"))


class BadRequest(ApiError):
    """400, 413 or 422: the service refused the request as invalid; `field` names the offending field."""


class Unauthorized(ApiError):
    """401: the service runs with access control and the request had no valid bearer token."""


class Forbidden(ApiError):
    """403: the token is valid, but its role (reader, writer, admin) or grant does not allow this."""


class NotFound(ApiError):
    """404: the table, snapshot, commit, tag or consumer does not exist; `code` says which."""


class Conflict(ApiError):
    """409: a commit conflict (with its structured `conflict`), or an already existing table or tag."""

    @property
    def conflict(self) -> ConflictModel | None:
        return self.body.conflict if self.body is not None else None

    @property
    def type(self) -> ConflictType | None:
        """The conflict type, e.g. DELETED_FILE_MISSING; None for a 409 that is not a commit conflict."""
        return self.conflict.type if self.conflict is not None else None

    @property
    def retryable(self) -> bool:
        """True when re-planning the commit on the new table state may succeed (e.g. BASE_SNAPSHOT_MOVED)."""
        return self.conflict.retryable if self.conflict is not None else False


class IdentifierReused(Conflict):
    """409 IDENTIFIER_REUSED: the commitUser and identifier name a commit the service recorded with other
    changes; nothing of this one was written. `recorded` says what the identifier names. A streaming
    writer replaying a batch it committed before (with new file names) gets this: the earlier commit
    stands, and the replay's files are its own to delete."""

    @property
    def recorded(self) -> RecordedCommitModel | None:
        conflict = self.conflict
        return conflict.recorded if conflict is not None else None


class TooManyRequests(ApiError):
    """429 COMMIT_QUEUE_FULL: the commits already waiting in the service would take too long to answer, so
    it refused this one before it queued and did nothing of it; retry after `retry_after` s."""


class ServiceUnavailable(ApiError):
    """503: the service did nothing (typically the table lock stayed busy); retry after `retry_after` s."""


class ServerError(ApiError):
    """A 5xx other than 503: the service failed; for a commit the outcome must be asked, not assumed."""


class CommitStateUnknown(CoordinatorClientError):
    """Whether a commit was applied could not be determined, even after asking the service.

    The commit may still be applied later (a request may be in flight). Resolve it by asking
    `commit_outcome(table_id, commit_user, identifier)` later, or by resending the very same commit
    (same commitUser, identifier and `idempotency_key`): the service deduplicates it. A transaction has
    no key (None): its commitUser and identifier identify it, and `table_id` is its first table.
    """

    def __init__(
        self,
        *,
        table_id: str,
        commit_user: str,
        identifier: int,
        idempotency_key: str | None,
        cause: BaseException,
    ) -> None:
        super().__init__(
            f"outcome of commit {commit_user!r}/{identifier} on table {table_id} is unknown: {cause}"
        )
        self.table_id = table_id
        self.commit_user = commit_user
        self.identifier = identifier
        self.idempotency_key = idempotency_key
        self.cause = cause
        self.__cause__ = cause


class StreamCutOff(CoordinatorClientError):
    """A streamed answer ended without its closing line, or with a count that does not match what came:
    what was read is not the whole answer. Ask again (pin the snapshot for the same scan plan)."""


class WriteAborted(CoordinatorClientError):
    """A Spark write or compaction did not commit; `__cause__` says why (a Conflict, a task failure...).

    `deleted_files` counts the data files the job wrote and then deleted. `kept_files` are left in place
    only when the commit's outcome is unknown (WriteOutcomeUnknown: the commit may still name them);
    otherwise it is empty.
    """

    def __init__(self, message: str, *, deleted_files: int, kept_files: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.deleted_files = deleted_files
        self.kept_files = list(kept_files)


class WriteOutcomeUnknown(WriteAborted):
    """A Spark write or compaction sent its commit, and neither its answer nor the coordinator, asked
    afterwards, could say whether it stands; `__cause__` is what broke (a timeout, a 5xx, CommitStateUnknown).

    Its data files are kept (`kept_files`, relative to the table), since a standing commit would name them.
    Ask `commit_outcome(table_id, commit_user, identifier)` later: `committed` means the rows are in the
    table; `rejected` means the files can go. Orphan cleanup removes them once no commit can name them.
    """

    def __init__(
        self,
        message: str,
        *,
        table_id: str,
        commit_user: str,
        identifier: int,
        kept_files: Sequence[str],
    ) -> None:
        super().__init__(message, deleted_files=0, kept_files=kept_files)
        self.table_id = table_id
        self.commit_user = commit_user
        self.identifier = identifier


def _parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds from now: delta-seconds or an HTTP date; None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: BadRequest,
    422: BadRequest,
    429: TooManyRequests,
    503: ServiceUnavailable,
}


def api_error(response: httpx.Response) -> ApiError:
    """The ApiError subclass for an error response; a body that is not an ErrorResponse is summarized."""
    status = response.status_code
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    try:
        body = ErrorResponse.model_validate_json(response.content)
    except ValidationError:
        code, message = _summary(response)
        return cls(status, None, headers=response.headers, code=code, message=message)
    if status == 409 and body.code == "IDENTIFIER_REUSED":
        cls = IdentifierReused
    return cls(status, body, headers=response.headers)


def reported_error(status: int, body: ErrorResponse) -> ApiError:
    """The ApiError subclass for an error the service reported inside a 200 answer: the last line of a
    stream that failed after it had begun."""
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    return cls(status, body)


def _summary(response: httpx.Response) -> tuple[str | None, str]:
    """The code and message of an answer that is not an ErrorResponse: its own if it is a JSON object with
    string `code` and `message` (a newer service's code), else no code and the start of its text."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("code"), str) and isinstance(data.get("message"), str):
        return data["code"], data["message"]
    return None, response.text.strip()[:500] or response.reason_phrase or "no body"
