"""CoordinatorClient and AsyncCoordinatorClient: typed access to the coordinator's API v1.

How the two clients share their code: every endpoint is a *flow*, a generator (`_Api` builds them) that
yields steps -- `_Send` (an HTTP request) or `_Pause` (a wait) -- and receives each response back. A flow
holds everything but the I/O: building the request, parsing the response, mapping errors and the whole
retry policy. The clients are thin drivers that perform the steps: `CoordinatorClient` with httpx.Client and
time.sleep, `AsyncCoordinatorClient` with httpx.AsyncClient and anyio.sleep. A transport failure is thrown
into the flow as a TransportError at the step that caused it, so flows read like plain sequential code.

Retry rules:

* 503 (ServiceUnavailable) means the service did nothing. Every method waits Retry-After (capped at
  30 s; exponential from 0.5 s when absent) and sends again, at most `max_unavailable_retries` times, then
  raises ServiceUnavailable.
* Nothing else is retried, except a commit whose answer was lost. A commit always carries an
  Idempotency-Key (the caller's, else a fresh uuid4 per call, reused on every resend). When its POST ends
  in a transport error (timeout, dropped connection) or a 5xx other than 503, it is never blindly resent;
  the client asks GET /tables/{id}/commits/{commitUser}/{identifier}:
    - committed -> a CommitResponse with the recorded snapshots and deduplicated=True;
    - rejected  -> Conflict carrying the recorded ConflictModel;
    - unknown   -> the service never received it: the commit is sent again (at most 3 sends in all;
      the service deduplicates by Idempotency-Key and by commitUser + identifier anyway).
  When the outcome query itself keeps failing (3 tries), CommitStateUnknown is raised. When every send
  failed and the service still knows nothing of the commit, the last error is raised if no send can still
  be in flight (each either could not open its connection or got a 5xx from the service itself), and
  CommitStateUnknown otherwise (a timed-out request or one behind a gateway's 502/504 may still arrive).
  A POST whose connection could not be opened never reached the service: it is resent without asking.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar, cast
from urllib.parse import quote

import anyio
import httpx
from pydantic import BaseModel

from coordinator_client.errors import (
    CommitStateUnknown,
    Conflict,
    ServerError,
    ServiceUnavailable,
    TransportError,
    api_error,
)
from coordinator_client.models import (
    AuditListResponse,
    CleanOrphansRequest,
    CleanOrphansResponse,
    CommitHistoryResponse,
    CommitOutcomeResponse,
    CommitRequest,
    CommitResponse,
    CommitsOverviewResponse,
    ConsumerListResponse,
    ConsumerModel,
    CreateTableRequest,
    CreateTagRequest,
    DeleteTagResponse,
    ErrorResponse,
    ExpireResponse,
    FileListResponse,
    HealthResponse,
    LockListResponse,
    OverviewResponse,
    ReleaseLockResponse,
    RollbackRequest,
    RollbackResponse,
    SequenceNumbersResponse,
    SetConsumerRequest,
    SetOptionsRequest,
    SnapshotListResponse,
    SnapshotModel,
    TableListResponse,
    TableResponse,
    TagListResponse,
    TagModel,
)

__all__ = ["AsyncCoordinatorClient", "CoordinatorClient"]

USER_AGENT = "paimon-coordinator-client/0.1.0"
USER_HEADER = "X-Coordinator-User"
"""Who asks: the service records it as the commitUser of the maintenance actions in the history."""
RETRY_AFTER_CAP_SECONDS = 30.0
"""A 503's Retry-After is honoured up to this many seconds."""

_COMMIT_SEND_DELAYS: tuple[float, ...] = (0.0, 0.2, 1.0)
"""Pause before each send of one commit: its length is the most sends of one commit."""
_OUTCOME_QUERY_DELAYS: tuple[float, ...] = (0.0, 0.5, 2.0)
"""Pause before each outcome query after a lost commit answer: its length is the most queries."""
_GATEWAY_STATUSES = frozenset({502, 504})
"""5xx a proxy answers while the request may still be running behind it."""

_T = TypeVar("_T")
_M = TypeVar("_M", bound=BaseModel)


# ---------------------------------------------------------------- flows: the shared, I/O-free layer


@dataclass(frozen=True)
class _Send:
    """One HTTP request for the driver to send; the driver replies with the httpx.Response."""

    method: str
    path: str
    params: Mapping[str, str | int] | None = None
    body: bytes | None = None
    headers: Mapping[str, str] | None = None


@dataclass(frozen=True)
class _Pause:
    """Wait this long; the driver replies with None."""

    seconds: float


_Step = _Send | _Pause
_Flow = Generator[_Step, httpx.Response | None, _T]


def _path(*parts: str | int) -> str:
    return "/" + "/".join(quote(str(part), safe="") for part in parts)


def _json_body(model: BaseModel) -> bytes:
    return model.model_dump_json(by_alias=True).encode()


_JSON_HEADERS = {"Content-Type": "application/json"}


def _send_json(method: str, path: str, request: BaseModel) -> _Send:
    return _Send(method, path, body=_json_body(request), headers=_JSON_HEADERS)


def _coerce(model: type[_M], value: _M | Mapping[str, Any]) -> _M:
    """The request model itself, or one validated from a dict (snake_case or camelCase keys)."""
    return value if isinstance(value, model) else model.model_validate(value)


def _unavailable_delay(error: ServiceUnavailable, retry: int) -> float:
    wait = error.retry_after if error.retry_after is not None else 0.5 * 2 ** (retry - 1)
    return min(wait, RETRY_AFTER_CAP_SECONDS)


def _may_be_in_flight(failure: TransportError | ServerError) -> bool:
    """Could the failed request still reach (or still be running in) the service?"""
    if isinstance(failure, TransportError):
        return failure.may_have_reached_service
    return failure.status_code in _GATEWAY_STATUSES


def _rejected(outcome: CommitOutcomeResponse) -> Conflict:
    conflict = outcome.conflict
    message = conflict.message if conflict is not None else "the commit was rejected"
    return Conflict(409, ErrorResponse(code="COMMIT_CONFLICT", message=message, conflict=conflict))


class _Api:
    """Every endpoint as a flow; the request building, parsing and retry policy of both clients."""

    def __init__(self, max_unavailable_retries: int) -> None:
        if max_unavailable_retries < 0:
            raise ValueError("max_unavailable_retries must be >= 0")
        self.max_unavailable_retries = max_unavailable_retries

    # ------------------------------------------------------------ building blocks

    def exchange(self, send: _Send) -> _Flow[httpx.Response]:
        """Send until the answer is not a 503 (within the retry budget); return a 2xx or raise ApiError."""
        retries = 0
        while True:
            response = yield send
            assert response is not None
            if response.is_success:
                return response
            error = api_error(response)
            if not isinstance(error, ServiceUnavailable) or retries >= self.max_unavailable_retries:
                raise error
            retries += 1
            yield _Pause(_unavailable_delay(error, retries))

    def call(self, send: _Send, model: type[_M]) -> _Flow[_M]:
        response = yield from self.exchange(send)
        return model.model_validate_json(response.content)

    # ------------------------------------------------------------ tables

    def create_table(self, request: CreateTableRequest | Mapping[str, Any]) -> _Flow[TableResponse]:
        body = _json_body(_coerce(CreateTableRequest, request))
        send = _Send("POST", _path("tables"), body=body, headers=_JSON_HEADERS)
        return (yield from self.call(send, TableResponse))

    def list_tables(self) -> _Flow[TableListResponse]:
        return (yield from self.call(_Send("GET", _path("tables")), TableListResponse))

    def get_table(self, table_id: str) -> _Flow[TableResponse]:
        return (yield from self.call(_Send("GET", _path("tables", table_id)), TableResponse))

    def drop_table(self, table_id: str, purge: bool) -> _Flow[None]:
        params = {"purge": "true" if purge else "false"}
        yield from self.exchange(_Send("DELETE", _path("tables", table_id), params=params))

    # ------------------------------------------------------------ commits

    def commit(
        self, table_id: str, request: CommitRequest | Mapping[str, Any], idempotency_key: str | None
    ) -> _Flow[CommitResponse]:
        commit = _coerce(CommitRequest, request)
        key = idempotency_key if idempotency_key is not None else str(uuid.uuid4())
        send = _Send(
            "POST",
            _path("tables", table_id, "commits"),
            body=_json_body(commit),
            headers={**_JSON_HEADERS, "Idempotency-Key": key},
        )
        failure: TransportError | ServerError | None = None
        in_flight = False  # may a failed send still reach the service, or still run in it?
        for delay in _COMMIT_SEND_DELAYS:
            if failure is not None and delay > 0:
                yield _Pause(delay)
            try:
                return (yield from self.call(send, CommitResponse))
            except (TransportError, ServerError) as error:
                failure = error
            in_flight = in_flight or _may_be_in_flight(failure)
            if isinstance(failure, TransportError) and not failure.may_have_reached_service:
                continue  # the connection could not even be opened: nothing reached the service
            outcome = yield from self._outcome_after(table_id, commit, key, failure)
            if outcome.status == "committed":
                return CommitResponse(snapshots=outcome.snapshots, deduplicated=True)
            if outcome.status == "rejected":
                raise _rejected(outcome) from failure
            # unknown: the service never received it, so sending it again is safe
        assert failure is not None
        if in_flight:
            raise CommitStateUnknown(
                table_id=table_id,
                commit_user=commit.commit_user,
                identifier=commit.identifier,
                idempotency_key=key,
                cause=failure,
            )
        raise failure

    def _outcome_after(
        self, table_id: str, commit: CommitRequest, key: str, failure: TransportError | ServerError
    ) -> _Flow[CommitOutcomeResponse]:
        """What became of a commit whose answer was lost; CommitStateUnknown when the service cannot tell."""
        for delay in _OUTCOME_QUERY_DELAYS:
            if delay > 0:
                yield _Pause(delay)
            try:
                return (yield from self.commit_outcome(table_id, commit.commit_user, commit.identifier, key))
            except (TransportError, ServerError, ServiceUnavailable):
                continue
        raise CommitStateUnknown(
            table_id=table_id,
            commit_user=commit.commit_user,
            identifier=commit.identifier,
            idempotency_key=key,
            cause=failure,
        )

    def commit_history(self, table_id: str, limit: int) -> _Flow[CommitHistoryResponse]:
        send = _Send("GET", _path("tables", table_id, "commits"), params={"limit": limit})
        return (yield from self.call(send, CommitHistoryResponse))

    def commit_outcome(
        self, table_id: str, commit_user: str, identifier: int, idempotency_key: str | None
    ) -> _Flow[CommitOutcomeResponse]:
        params = {"idempotencyKey": idempotency_key} if idempotency_key is not None else None
        send = _Send("GET", _path("tables", table_id, "commits", commit_user, identifier), params=params)
        return (yield from self.call(send, CommitOutcomeResponse))

    # ------------------------------------------------------------ reads

    def list_snapshots(self, table_id: str, limit: int, before: int | None) -> _Flow[SnapshotListResponse]:
        params: dict[str, str | int] = {"limit": limit}
        if before is not None:
            params["before"] = before
        send = _Send("GET", _path("tables", table_id, "snapshots"), params=params)
        return (yield from self.call(send, SnapshotListResponse))

    def latest_snapshot(self, table_id: str) -> _Flow[SnapshotModel]:
        return (
            yield from self.call(
                _Send("GET", _path("tables", table_id, "snapshots", "latest")), SnapshotModel
            )
        )

    def get_snapshot(self, table_id: str, snapshot_id: int) -> _Flow[SnapshotModel]:
        send = _Send("GET", _path("tables", table_id, "snapshots", snapshot_id))
        return (yield from self.call(send, SnapshotModel))

    def live_files(
        self, table_id: str, snapshot: int | None, partition: Mapping[str, Any] | None
    ) -> _Flow[FileListResponse]:
        params: dict[str, str | int] = {}
        if snapshot is not None:
            params["snapshot"] = snapshot
        if partition is not None:
            params["partition"] = json.dumps(dict(partition), separators=(",", ":"))
        send = _Send("GET", _path("tables", table_id, "files"), params=params)
        return (yield from self.call(send, FileListResponse))

    def sequence_numbers(
        self, table_id: str, partition: Mapping[str, Any] | None
    ) -> _Flow[SequenceNumbersResponse]:
        params: dict[str, str | int] = {}
        if partition is not None:
            params["partition"] = json.dumps(dict(partition), separators=(",", ":"))
        send = _Send("GET", _path("tables", table_id, "sequence-numbers"), params=params)
        return (yield from self.call(send, SequenceNumbersResponse))

    # ------------------------------------------------------------ maintenance

    def set_options(
        self, table_id: str, options: Mapping[str, str], remove: Sequence[str]
    ) -> _Flow[TableResponse]:
        request = SetOptionsRequest(set=dict(options), remove=list(remove))
        send = _send_json("PATCH", _path("tables", table_id, "options"), request)
        return (yield from self.call(send, TableResponse))

    def expire(self, table_id: str) -> _Flow[ExpireResponse]:
        return (yield from self.call(_Send("POST", _path("tables", table_id, "expire")), ExpireResponse))

    def list_tags(self, table_id: str) -> _Flow[TagListResponse]:
        return (yield from self.call(_Send("GET", _path("tables", table_id, "tags")), TagListResponse))

    def create_tag(self, table_id: str, name: str, snapshot_id: int | None) -> _Flow[TagModel]:
        request = CreateTagRequest(name=name, snapshot_id=snapshot_id)
        send = _send_json("POST", _path("tables", table_id, "tags"), request)
        return (yield from self.call(send, TagModel))

    def delete_tag(self, table_id: str, name: str) -> _Flow[DeleteTagResponse]:
        send = _Send("DELETE", _path("tables", table_id, "tags", name))
        return (yield from self.call(send, DeleteTagResponse))

    def rollback(self, table_id: str, snapshot_id: int | None, tag: str | None) -> _Flow[RollbackResponse]:
        request = RollbackRequest(snapshot_id=snapshot_id, tag=tag)
        send = _send_json("POST", _path("tables", table_id, "rollback"), request)
        return (yield from self.call(send, RollbackResponse))

    def list_consumers(self, table_id: str) -> _Flow[ConsumerListResponse]:
        send = _Send("GET", _path("tables", table_id, "consumers"))
        return (yield from self.call(send, ConsumerListResponse))

    def set_consumer(self, table_id: str, consumer_id: str, next_snapshot_id: int) -> _Flow[ConsumerModel]:
        request = SetConsumerRequest(next_snapshot_id=next_snapshot_id)
        send = _send_json("PUT", _path("tables", table_id, "consumers", consumer_id), request)
        return (yield from self.call(send, ConsumerModel))

    def delete_consumer(self, table_id: str, consumer_id: str) -> _Flow[None]:
        yield from self.exchange(_Send("DELETE", _path("tables", table_id, "consumers", consumer_id)))

    def clean_orphans(
        self, table_id: str, older_than_seconds: float, dry_run: bool
    ) -> _Flow[CleanOrphansResponse]:
        request = CleanOrphansRequest(older_than_seconds=older_than_seconds, dry_run=dry_run)
        send = _send_json("POST", _path("tables", table_id, "orphans", "clean"), request)
        return (yield from self.call(send, CleanOrphansResponse))

    # ------------------------------------------------------------ ops

    def locks(self) -> _Flow[LockListResponse]:
        return (yield from self.call(_Send("GET", _path("locks")), LockListResponse))

    def release_lock(self, lock_id: str) -> _Flow[ReleaseLockResponse]:
        return (yield from self.call(_Send("POST", _path("locks", lock_id, "release")), ReleaseLockResponse))

    def recent_commits(self, limit: int, table_id: str | None) -> _Flow[CommitsOverviewResponse]:
        params: dict[str, str | int] = {"limit": limit} | ({"table": table_id} if table_id else {})
        return (yield from self.call(_Send("GET", _path("commits"), params=params), CommitsOverviewResponse))

    def audit(self, limit: int) -> _Flow[AuditListResponse]:
        return (
            yield from self.call(_Send("GET", _path("audit"), params={"limit": limit}), AuditListResponse)
        )

    def overview(self, minutes: int) -> _Flow[OverviewResponse]:
        send = _Send("GET", _path("ops", "overview"), params={"minutes": minutes})
        return (yield from self.call(send, OverviewResponse))

    def metrics(self) -> _Flow[str]:
        response = yield from self.exchange(_Send("GET", _path("metrics")))
        return response.text

    def health(self) -> _Flow[HealthResponse]:
        return (yield from self.call(_Send("GET", _path("health")), HealthResponse))


def _headers(user: str | None, token: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    """The headers of every request. With a token the service knows who asks; without one (a service
    running without access control) `user` names who asks, and maintenance records it."""
    own = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if user is not None:
        own[USER_HEADER] = user
    if token is not None:
        own["Authorization"] = f"Bearer {token}"
    return {**own, **(extra or {})}


def _request(http: httpx.Client | httpx.AsyncClient, send: _Send) -> httpx.Request:
    params = {k: str(v) for k, v in send.params.items()} if send.params else None
    return http.build_request(send.method, send.path, params=params, content=send.body, headers=send.headers)


# ---------------------------------------------------------------- the drivers


class CoordinatorClient:
    """Blocking client of the coordinator's API v1. Thread-safe like the httpx.Client it wraps.

    Every method raises the errors of `coordinator_client.errors`; see this module's docstring for what
    is retried. `token` is the bearer token a service with access control needs (`coordinator tokens
    create`); its name is recorded as who did a maintenance action. Without access control, `user` (the
    X-Coordinator-User header) names who asks, else the service records "api". Use as a context manager,
    or call close().
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
        max_unavailable_retries: int = 5,
        user: str | None = None,
        token: str | None = None,
    ) -> None:
        self._api = _Api(max_unavailable_retries)
        self._http = httpx.Client(
            base_url=base_url, timeout=timeout, transport=transport, headers=_headers(user, token, headers)
        )

    def _run(self, flow: _Flow[_T]) -> _T:
        reply: httpx.Response | None = None
        failure: TransportError | None = None
        while True:
            try:
                step = flow.send(reply) if failure is None else flow.throw(failure)
            except StopIteration as stop:
                return cast(_T, stop.value)
            reply, failure = None, None
            if isinstance(step, _Pause):
                time.sleep(step.seconds)
                continue
            request = _request(self._http, step)
            try:
                reply = self._http.send(request)
            except httpx.TransportError as error:
                failure = TransportError.wrap(error, method=request.method, url=str(request.url))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> CoordinatorClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------ tables

    def create_table(self, request: CreateTableRequest | Mapping[str, Any]) -> TableResponse:
        """Create a table (or register one by `location`); Conflict if the name is taken."""
        return self._run(self._api.create_table(request))

    def register_table(self, database: str, name: str, location: str) -> TableResponse:
        """Register an existing Paimon table stored at `location`."""
        return self._run(
            self._api.create_table(CreateTableRequest(database=database, name=name, location=location))
        )

    def list_tables(self) -> TableListResponse:
        return self._run(self._api.list_tables())

    def get_table(self, table_id: str) -> TableResponse:
        return self._run(self._api.get_table(table_id))

    def drop_table(self, table_id: str, purge: bool = True) -> None:
        """Forget the table; with `purge` its folder is deleted too."""
        self._run(self._api.drop_table(table_id, purge))

    # ------------------------------------------------------------ commits

    def commit(
        self,
        table_id: str,
        request: CommitRequest | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> CommitResponse:
        """Commit a ManifestCommittable; a lost answer is resolved by asking, never by a blind resend.

        Raises:
            Conflict: the commit conflicts (`.conflict` says why); nothing was published.
            CommitStateUnknown: the outcome could not be determined; resend the same commit later.
        """
        return self._run(self._api.commit(table_id, request, idempotency_key))

    def commit_history(self, table_id: str, limit: int = 100) -> CommitHistoryResponse:
        """Newest first."""
        return self._run(self._api.commit_history(table_id, limit))

    def commit_outcome(
        self, table_id: str, commit_user: str, identifier: int, idempotency_key: str | None = None
    ) -> CommitOutcomeResponse:
        """committed, rejected or unknown (the service never received it); a key asks about that request."""
        return self._run(self._api.commit_outcome(table_id, commit_user, identifier, idempotency_key))

    # ------------------------------------------------------------ reads

    def list_snapshots(
        self, table_id: str, limit: int = 100, before: int | None = None
    ) -> SnapshotListResponse:
        """Newest first; page with `before`."""
        return self._run(self._api.list_snapshots(table_id, limit, before))

    def latest_snapshot(self, table_id: str) -> SnapshotModel:
        """NotFound when the table has no snapshot yet."""
        return self._run(self._api.latest_snapshot(table_id))

    def get_snapshot(self, table_id: str, snapshot_id: int) -> SnapshotModel:
        return self._run(self._api.get_snapshot(table_id, snapshot_id))

    def live_files(
        self, table_id: str, snapshot: int | None = None, partition: Mapping[str, Any] | None = None
    ) -> FileListResponse:
        """The live data files at `snapshot` (the latest by default), optionally of one partition."""
        return self._run(self._api.live_files(table_id, snapshot, partition))

    def sequence_numbers(
        self, table_id: str, partition: Mapping[str, Any] | None = None
    ) -> SequenceNumbersResponse:
        """The highest sequence number per (partition, bucket) of the latest live files, optionally of
        one partition: what a writer numbers its next files after."""
        return self._run(self._api.sequence_numbers(table_id, partition))

    # ------------------------------------------------------------ maintenance

    def set_options(
        self, table_id: str, set: Mapping[str, str] | None = None, remove: Sequence[str] | None = None
    ) -> TableResponse:
        """Set and remove table options (e.g. snapshot.num-retained.max) as the next schema version.

        BadRequest when an option cannot change on an existing table (bucket, primary-key...) or a
        retention option is invalid; `field` names it, e.g. "set.bucket".
        """
        return self._run(self._api.set_options(table_id, set or {}, remove or ()))

    def expire(self, table_id: str) -> ExpireResponse:
        """Expire the snapshots the table's retention options allow now; tags and consumers keep theirs."""
        return self._run(self._api.expire(table_id))

    def list_tags(self, table_id: str) -> TagListResponse:
        return self._run(self._api.list_tags(table_id))

    def create_tag(self, table_id: str, name: str, snapshot_id: int | None = None) -> TagModel:
        """Tag a retained snapshot (the latest by default): its files outlive expiration until the tag goes.

        NotFound when the snapshot is not retained; Conflict when the tag exists.
        """
        return self._run(self._api.create_tag(table_id, name, snapshot_id))

    def delete_tag(self, table_id: str, name: str) -> DeleteTagResponse:
        """Delete a tag, and the files only it kept alive; NotFound when there is no such tag."""
        return self._run(self._api.delete_tag(table_id, name))

    def rollback(
        self, table_id: str, *, snapshot_id: int | None = None, tag: str | None = None
    ) -> RollbackResponse:
        """Make a retained snapshot or a tag (give exactly one) the latest again.

        Later snapshots and tags are removed with the files only they referenced; there is no undo.
        """
        return self._run(self._api.rollback(table_id, snapshot_id, tag))

    def list_consumers(self, table_id: str) -> ConsumerListResponse:
        return self._run(self._api.list_consumers(table_id))

    def set_consumer(self, table_id: str, consumer_id: str, next_snapshot_id: int) -> ConsumerModel:
        """Register or move a consumer: expiration keeps `next_snapshot_id` and later for it.

        BadRequest (field nextSnapshotId) when that snapshot is expired or beyond the next one.
        """
        return self._run(self._api.set_consumer(table_id, consumer_id, next_snapshot_id))

    def delete_consumer(self, table_id: str, consumer_id: str) -> None:
        """Forget a consumer, so that expiration no longer waits for it; NotFound when there is none."""
        self._run(self._api.delete_consumer(table_id, consumer_id))

    def clean_orphans(
        self, table_id: str, *, older_than_seconds: float = 86_400.0, dry_run: bool = False
    ) -> CleanOrphansResponse:
        """Delete the table's files that no retained snapshot or tag references; with `dry_run`, list them.

        Only files older than `older_than_seconds` go: a younger one may belong to a commit on its way.
        """
        return self._run(self._api.clean_orphans(table_id, older_than_seconds, dry_run))

    # ------------------------------------------------------------ ops

    def locks(self) -> LockListResponse:
        """Held locks: owner, epoch, acquired and expiry, and the commits waiting behind each."""
        return self._run(self._api.locks())

    def release_lock(self, lock_id: str) -> ReleaseLockResponse:
        """Force-release a stuck lock (admin); its holder's commit is then rejected. Audited."""
        return self._run(self._api.release_lock(lock_id))

    def recent_commits(self, limit: int = 100, table_id: str | None = None) -> CommitsOverviewResponse:
        """Commits in flight (with their phase) and the latest recorded ones, of all tables or one."""
        return self._run(self._api.recent_commits(limit, table_id))

    def audit(self, limit: int = 100) -> AuditListResponse:
        """Forced lock releases and token changes, newest first."""
        return self._run(self._api.audit(limit))

    def overview(self, minutes: int = 30) -> OverviewResponse:
        """The dashboard's data: tables, commits per minute, latency by phase, latest conflicts."""
        return self._run(self._api.overview(minutes))

    def metrics(self) -> str:
        """The Prometheus text exposition."""
        return self._run(self._api.metrics())

    def health(self) -> HealthResponse:
        return self._run(self._api.health())


class AsyncCoordinatorClient:
    """The asyncio/trio twin of CoordinatorClient: the same methods, awaited; `async with` or close()."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
        max_unavailable_retries: int = 5,
        user: str | None = None,
        token: str | None = None,
    ) -> None:
        self._api = _Api(max_unavailable_retries)
        self._http = httpx.AsyncClient(
            base_url=base_url, timeout=timeout, transport=transport, headers=_headers(user, token, headers)
        )

    async def _run(self, flow: _Flow[_T]) -> _T:
        reply: httpx.Response | None = None
        failure: TransportError | None = None
        while True:
            try:
                step = flow.send(reply) if failure is None else flow.throw(failure)
            except StopIteration as stop:
                return cast(_T, stop.value)
            reply, failure = None, None
            if isinstance(step, _Pause):
                await anyio.sleep(step.seconds)
                continue
            request = _request(self._http, step)
            try:
                reply = await self._http.send(request)
            except httpx.TransportError as error:
                failure = TransportError.wrap(error, method=request.method, url=str(request.url))

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncCoordinatorClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # ------------------------------------------------------------ tables

    async def create_table(self, request: CreateTableRequest | Mapping[str, Any]) -> TableResponse:
        return await self._run(self._api.create_table(request))

    async def register_table(self, database: str, name: str, location: str) -> TableResponse:
        request = CreateTableRequest(database=database, name=name, location=location)
        return await self._run(self._api.create_table(request))

    async def list_tables(self) -> TableListResponse:
        return await self._run(self._api.list_tables())

    async def get_table(self, table_id: str) -> TableResponse:
        return await self._run(self._api.get_table(table_id))

    async def drop_table(self, table_id: str, purge: bool = True) -> None:
        await self._run(self._api.drop_table(table_id, purge))

    # ------------------------------------------------------------ commits

    async def commit(
        self,
        table_id: str,
        request: CommitRequest | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> CommitResponse:
        """See CoordinatorClient.commit."""
        return await self._run(self._api.commit(table_id, request, idempotency_key))

    async def commit_history(self, table_id: str, limit: int = 100) -> CommitHistoryResponse:
        return await self._run(self._api.commit_history(table_id, limit))

    async def commit_outcome(
        self, table_id: str, commit_user: str, identifier: int, idempotency_key: str | None = None
    ) -> CommitOutcomeResponse:
        return await self._run(self._api.commit_outcome(table_id, commit_user, identifier, idempotency_key))

    # ------------------------------------------------------------ reads

    async def list_snapshots(
        self, table_id: str, limit: int = 100, before: int | None = None
    ) -> SnapshotListResponse:
        return await self._run(self._api.list_snapshots(table_id, limit, before))

    async def latest_snapshot(self, table_id: str) -> SnapshotModel:
        return await self._run(self._api.latest_snapshot(table_id))

    async def get_snapshot(self, table_id: str, snapshot_id: int) -> SnapshotModel:
        return await self._run(self._api.get_snapshot(table_id, snapshot_id))

    async def live_files(
        self, table_id: str, snapshot: int | None = None, partition: Mapping[str, Any] | None = None
    ) -> FileListResponse:
        return await self._run(self._api.live_files(table_id, snapshot, partition))

    async def sequence_numbers(
        self, table_id: str, partition: Mapping[str, Any] | None = None
    ) -> SequenceNumbersResponse:
        return await self._run(self._api.sequence_numbers(table_id, partition))

    # ------------------------------------------------------------ maintenance

    async def set_options(
        self, table_id: str, set: Mapping[str, str] | None = None, remove: Sequence[str] | None = None
    ) -> TableResponse:
        """See CoordinatorClient.set_options."""
        return await self._run(self._api.set_options(table_id, set or {}, remove or ()))

    async def expire(self, table_id: str) -> ExpireResponse:
        return await self._run(self._api.expire(table_id))

    async def list_tags(self, table_id: str) -> TagListResponse:
        return await self._run(self._api.list_tags(table_id))

    async def create_tag(self, table_id: str, name: str, snapshot_id: int | None = None) -> TagModel:
        return await self._run(self._api.create_tag(table_id, name, snapshot_id))

    async def delete_tag(self, table_id: str, name: str) -> DeleteTagResponse:
        return await self._run(self._api.delete_tag(table_id, name))

    async def rollback(
        self, table_id: str, *, snapshot_id: int | None = None, tag: str | None = None
    ) -> RollbackResponse:
        """See CoordinatorClient.rollback."""
        return await self._run(self._api.rollback(table_id, snapshot_id, tag))

    async def list_consumers(self, table_id: str) -> ConsumerListResponse:
        return await self._run(self._api.list_consumers(table_id))

    async def set_consumer(self, table_id: str, consumer_id: str, next_snapshot_id: int) -> ConsumerModel:
        return await self._run(self._api.set_consumer(table_id, consumer_id, next_snapshot_id))

    async def delete_consumer(self, table_id: str, consumer_id: str) -> None:
        await self._run(self._api.delete_consumer(table_id, consumer_id))

    async def clean_orphans(
        self, table_id: str, *, older_than_seconds: float = 86_400.0, dry_run: bool = False
    ) -> CleanOrphansResponse:
        """See CoordinatorClient.clean_orphans."""
        return await self._run(self._api.clean_orphans(table_id, older_than_seconds, dry_run))

    # ------------------------------------------------------------ ops

    async def locks(self) -> LockListResponse:
        return await self._run(self._api.locks())

    async def release_lock(self, lock_id: str) -> ReleaseLockResponse:
        return await self._run(self._api.release_lock(lock_id))

    async def recent_commits(self, limit: int = 100, table_id: str | None = None) -> CommitsOverviewResponse:
        return await self._run(self._api.recent_commits(limit, table_id))

    async def audit(self, limit: int = 100) -> AuditListResponse:
        return await self._run(self._api.audit(limit))

    async def overview(self, minutes: int = 30) -> OverviewResponse:
        return await self._run(self._api.overview(minutes))

    async def metrics(self) -> str:
        return await self._run(self._api.metrics())

    async def health(self) -> HealthResponse:
        return await self._run(self._api.health())
