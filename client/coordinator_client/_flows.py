"""Flows: the I/O-free half that CoordinatorClient and AsyncCoordinatorClient share.

How the two clients share their code: every endpoint is a *flow*, a generator (`Api` builds them) that
yields steps -- `Send` (an HTTP request) or `Pause` (a wait) -- and receives each response back. A flow
holds everything but the I/O: building the request, parsing the response, mapping errors and the whole
retry policy. The clients are thin drivers that perform the steps: `CoordinatorClient` with httpx.Client and
time.sleep, `AsyncCoordinatorClient` with httpx.AsyncClient and anyio.sleep. A transport failure is thrown
into the flow as a TransportError at the step that caused it, so flows read like plain sequential code.

Retry rules:

* 503 (ServiceUnavailable) means the service did nothing. Every method waits Retry-After (capped at
  30 s; exponential from 0.5 s when absent) and sends again, at most `max_unavailable_retries` times, then
  raises ServiceUnavailable. A 429 (TooManyRequests: the commits waiting in the service would take too
  long, so it refused this one before it queued) and a 409 LOCK_LOST (the table lock's lease ran out
  before the change was written, so nothing of it was) mean the same and are resent the same way, from
  the same budget, then raised.
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
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from coordinator_client._calls import JSON_HEADERS, Calls, coerce, json_body, page_params, route, send_json
from coordinator_client._retry_policy import (
    RETRY_AFTER_CAP_SECONDS as RETRY_AFTER_CAP_SECONDS,  # part of this module's interface
)
from coordinator_client._retry_policy import (
    may_be_in_flight,
    rejected,
)
from coordinator_client._scan import JSON_LINES
from coordinator_client._steps import Flow, Pause, Send
from coordinator_client.errors import (
    CommitStateUnknown,
    ServerError,
    ServiceUnavailable,
    TransportError,
)
from coordinator_client.models import (
    AlterTableRequest,
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
    ExpireResponse,
    FileListResponse,
    HealthResponse,
    LockListResponse,
    OverviewResponse,
    ReleaseLockResponse,
    RollbackRequest,
    RollbackResponse,
    SchemaChange,
    SequenceNumbersResponse,
    SetConsumerRequest,
    SetOptionsRequest,
    SnapshotListResponse,
    SnapshotModel,
    TableListResponse,
    TableResponse,
    TagListResponse,
    TagModel,
    TransactionRequest,
    TransactionResponse,
)

COMMIT_SEND_DELAYS: tuple[float, ...] = (0.0, 0.2, 1.0)
"""Pause before each send of one commit: its length is the most sends of one commit."""
OUTCOME_QUERY_DELAYS: tuple[float, ...] = (0.0, 0.5, 2.0)
"""Pause before each outcome query after a lost commit answer: its length is the most queries."""

_M = TypeVar("_M", bound=BaseModel)


class Api(Calls):
    """Every endpoint as a flow; the request building, parsing and retry policy of both clients."""

    def create_table(self, request: CreateTableRequest | Mapping[str, Any]) -> Flow[TableResponse]:
        send = send_json("POST", route("tables"), coerce(CreateTableRequest, request))
        return (yield from self.call(send, TableResponse))

    def list_tables(
        self, limit: int | None, page_token: str | None, database: str | None, name_prefix: str | None
    ) -> Flow[TableListResponse]:
        params = page_params(limit, page_token, database, name_prefix)
        return (yield from self.call(Send("GET", route("tables"), params=params), TableListResponse))

    def get_table(self, table_id: str) -> Flow[TableResponse]:
        return (yield from self.call(Send("GET", route("tables", table_id)), TableResponse))

    def drop_table(self, table_id: str, purge: bool) -> Flow[None]:
        params = {"purge": "true" if purge else "false"}
        yield from self.exchange(Send("DELETE", route("tables", table_id), params=params))

    def commit(
        self, table_id: str, request: CommitRequest | Mapping[str, Any], idempotency_key: str | None
    ) -> Flow[CommitResponse]:
        commit = coerce(CommitRequest, request)
        key = idempotency_key if idempotency_key is not None else str(uuid.uuid4())
        send = Send(
            "POST",
            route("tables", table_id, "commits"),
            body=json_body(commit),
            headers={**JSON_HEADERS, "Idempotency-Key": key},
        )

        def resolve(failure: TransportError | ServerError) -> Flow[CommitResponse | None]:
            outcome = yield from self._outcome_after(
                table_id, commit.commit_user, commit.identifier, key, failure
            )
            if outcome.status == "rejected":
                raise rejected(outcome) from failure
            committed = outcome.status == "committed"
            return CommitResponse(snapshots=outcome.snapshots, deduplicated=True) if committed else None

        def unknown(failure: TransportError | ServerError) -> CommitStateUnknown:
            return CommitStateUnknown(
                table_id=table_id,
                commit_user=commit.commit_user,
                identifier=commit.identifier,
                idempotency_key=key,
                cause=failure,
            )

        return (yield from self._send_resolving(send, CommitResponse, resolve, unknown))

    def _send_resolving(
        self,
        send: Send,
        model: type[_M],
        resolve: Callable[[TransportError | ServerError], Flow[_M | None]],
        unknown: Callable[[TransportError | ServerError], CommitStateUnknown],
    ) -> Flow[_M]:
        """Send a commit; when its answer is lost, `resolve` asks what became of it: the answer, or None
        when the service never received it and sending it again is safe (see the retry rules above)."""
        failure: TransportError | ServerError | None = None
        in_flight = False  # may a failed send still reach the service, or still run in it?
        for delay in COMMIT_SEND_DELAYS:
            if failure is not None and delay > 0:
                yield Pause(delay)
            try:
                return (yield from self.call(send, model))
            except (TransportError, ServerError) as error:
                failure = error
            in_flight = in_flight or may_be_in_flight(failure)
            if isinstance(failure, TransportError) and not failure.may_have_reached_service:
                continue  # the connection could not even be opened: nothing reached the service
            answer = yield from resolve(failure)
            if answer is not None:
                return answer
        assert failure is not None
        if in_flight:
            raise unknown(failure)
        raise failure

    def _outcome_after(
        self,
        table_id: str,
        commit_user: str,
        identifier: int,
        key: str | None,
        failure: TransportError | ServerError,
    ) -> Flow[CommitOutcomeResponse]:
        """What became of a commit whose answer was lost; CommitStateUnknown when the service cannot tell."""
        for delay in OUTCOME_QUERY_DELAYS:
            if delay > 0:
                yield Pause(delay)
            try:
                return (yield from self.commit_outcome(table_id, commit_user, identifier, key))
            except (TransportError, ServerError, ServiceUnavailable):
                continue
        raise CommitStateUnknown(
            table_id=table_id,
            commit_user=commit_user,
            identifier=identifier,
            idempotency_key=key,
            cause=failure,
        )

    def commit_transaction(
        self, request: TransactionRequest | Mapping[str, Any]
    ) -> Flow[TransactionResponse]:
        """A commit over several tables, with a commit's handling of a lost answer, except that it is
        resolved by sending the transaction again: a transaction carries no Idempotency-Key, and its
        name alone does not say it is this transaction (the batch identifier names none, and another
        commit may have used any other), while the service answers a resend of the same changes from
        its record and refuses other changes under a used name (IdentifierReused)."""
        transaction = coerce(TransactionRequest, request)
        send = Send("POST", "/transactions", body=json_body(transaction), headers=JSON_HEADERS)

        def resend(_failure: TransportError | ServerError) -> Flow[TransactionResponse | None]:
            return None
            yield  # a flow that asks nothing

        def unknown(failure: TransportError | ServerError) -> CommitStateUnknown:
            return CommitStateUnknown(
                table_id=transaction.tables[0].table,
                commit_user=transaction.commit_user,
                identifier=transaction.identifier,
                idempotency_key=None,
                cause=failure,
            )

        return (yield from self._send_resolving(send, TransactionResponse, resend, unknown))

    def commit_history(self, table_id: str, limit: int) -> Flow[CommitHistoryResponse]:
        send = Send("GET", route("tables", table_id, "commits"), params={"limit": limit})
        return (yield from self.call(send, CommitHistoryResponse))

    def commit_outcome(
        self, table_id: str, commit_user: str, identifier: int, idempotency_key: str | None
    ) -> Flow[CommitOutcomeResponse]:
        params = {"idempotencyKey": idempotency_key} if idempotency_key is not None else None
        send = Send("GET", route("tables", table_id, "commits", commit_user, identifier), params=params)
        return (yield from self.call(send, CommitOutcomeResponse))

    def list_snapshots(self, table_id: str, limit: int, before: int | None) -> Flow[SnapshotListResponse]:
        params: dict[str, str | int] = {"limit": limit}
        if before is not None:
            params["before"] = before
        send = Send("GET", route("tables", table_id, "snapshots"), params=params)
        return (yield from self.call(send, SnapshotListResponse))

    def latest_snapshot(self, table_id: str) -> Flow[SnapshotModel]:
        return (
            yield from self.call(Send("GET", route("tables", table_id, "snapshots", "latest")), SnapshotModel)
        )

    def get_snapshot(self, table_id: str, snapshot_id: int) -> Flow[SnapshotModel]:
        send = Send("GET", route("tables", table_id, "snapshots", snapshot_id))
        return (yield from self.call(send, SnapshotModel))

    def live_files(
        self, table_id: str, snapshot: int | None, partition: Mapping[str, Any] | None
    ) -> Flow[FileListResponse]:
        params: dict[str, str | int] = {}
        if snapshot is not None:
            params["snapshot"] = snapshot
        if partition is not None:
            params["partition"] = json.dumps(dict(partition), separators=(",", ":"))
        send = Send("GET", route("tables", table_id, "files"), params=params)
        return (yield from self.call(send, FileListResponse))

    def scan_plan(
        self,
        table_id: str,
        snapshot: int | None,
        partition: Mapping[str, Any] | None,
        scope: str = "all",
    ) -> Flow[httpx.Response]:
        """The scan plan as JSON lines: the answer comes back open, for a ScanPlanStream to read."""
        params: dict[str, str | int] = {}
        if snapshot is not None:
            params["snapshot"] = snapshot
        if partition is not None:
            params["partition"] = json.dumps(dict(partition), separators=(",", ":"))
        if scope != "all":  # the default is left out: a service without `scope` answers as before
            params["scope"] = scope
        path = route("tables", table_id, "files")
        send = Send("GET", path, params=params, headers={"Accept": JSON_LINES}, stream=True)
        return (yield from self.exchange(send))

    def sequence_numbers(
        self, table_id: str, partition: Mapping[str, Any] | None
    ) -> Flow[SequenceNumbersResponse]:
        params: dict[str, str | int] = {}
        if partition is not None:
            params["partition"] = json.dumps(dict(partition), separators=(",", ":"))
        send = Send("GET", route("tables", table_id, "sequence-numbers"), params=params)
        return (yield from self.call(send, SequenceNumbersResponse))

    def set_options(
        self, table_id: str, options: Mapping[str, str], remove: Sequence[str]
    ) -> Flow[TableResponse]:
        request = SetOptionsRequest(set=dict(options), remove=list(remove))
        send = send_json("PATCH", route("tables", table_id, "options"), request)
        return (yield from self.call(send, TableResponse))

    def alter_table(
        self, table_id: str, changes: Sequence[SchemaChange | Mapping[str, Any]]
    ) -> Flow[TableResponse]:
        request = AlterTableRequest.model_validate({"changes": list(changes)})
        send = send_json("POST", route("tables", table_id, "schema"), request)
        return (yield from self.call(send, TableResponse))

    def expire(self, table_id: str) -> Flow[ExpireResponse]:
        return (yield from self.call(Send("POST", route("tables", table_id, "expire")), ExpireResponse))

    def list_tags(self, table_id: str) -> Flow[TagListResponse]:
        return (yield from self.call(Send("GET", route("tables", table_id, "tags")), TagListResponse))

    def create_tag(self, table_id: str, name: str, snapshot_id: int | None) -> Flow[TagModel]:
        request = CreateTagRequest(name=name, snapshot_id=snapshot_id)
        send = send_json("POST", route("tables", table_id, "tags"), request)
        return (yield from self.call(send, TagModel))

    def delete_tag(self, table_id: str, name: str) -> Flow[DeleteTagResponse]:
        send = Send("DELETE", route("tables", table_id, "tags", name))
        return (yield from self.call(send, DeleteTagResponse))

    def rollback(self, table_id: str, snapshot_id: int | None, tag: str | None) -> Flow[RollbackResponse]:
        request = RollbackRequest(snapshot_id=snapshot_id, tag=tag)
        send = send_json("POST", route("tables", table_id, "rollback"), request)
        return (yield from self.call(send, RollbackResponse))

    def list_consumers(self, table_id: str) -> Flow[ConsumerListResponse]:
        send = Send("GET", route("tables", table_id, "consumers"))
        return (yield from self.call(send, ConsumerListResponse))

    def set_consumer(self, table_id: str, consumer_id: str, next_snapshot_id: int) -> Flow[ConsumerModel]:
        request = SetConsumerRequest(next_snapshot_id=next_snapshot_id)
        send = send_json("PUT", route("tables", table_id, "consumers", consumer_id), request)
        return (yield from self.call(send, ConsumerModel))

    def delete_consumer(self, table_id: str, consumer_id: str) -> Flow[None]:
        yield from self.exchange(Send("DELETE", route("tables", table_id, "consumers", consumer_id)))

    def clean_orphans(
        self, table_id: str, older_than_seconds: float, dry_run: bool
    ) -> Flow[CleanOrphansResponse]:
        request = CleanOrphansRequest(older_than_seconds=older_than_seconds, dry_run=dry_run)
        send = send_json("POST", route("tables", table_id, "orphans", "clean"), request)
        return (yield from self.call(send, CleanOrphansResponse))

    def locks(self) -> Flow[LockListResponse]:
        return (yield from self.call(Send("GET", route("locks")), LockListResponse))

    def release_lock(self, lock_id: str) -> Flow[ReleaseLockResponse]:
        return (yield from self.call(Send("POST", route("locks", lock_id, "release")), ReleaseLockResponse))

    def recent_commits(self, limit: int, table_id: str | None) -> Flow[CommitsOverviewResponse]:
        params: dict[str, str | int] = {"limit": limit} | ({"table": table_id} if table_id else {})
        return (yield from self.call(Send("GET", route("commits"), params=params), CommitsOverviewResponse))

    def audit(self, limit: int) -> Flow[AuditListResponse]:
        return (yield from self.call(Send("GET", route("audit"), params={"limit": limit}), AuditListResponse))

    def overview(
        self,
        minutes: int,
        limit: int | None = None,
        page_token: str | None = None,
        database: str | None = None,
        name_prefix: str | None = None,
    ) -> Flow[OverviewResponse]:
        params: dict[str, str | int] = {"minutes": minutes}
        params.update(page_params(limit, page_token, database, name_prefix))
        send = Send("GET", route("ops", "overview"), params=params)
        return (yield from self.call(send, OverviewResponse))

    def metrics(self) -> Flow[str]:
        response = yield from self.exchange(Send("GET", route("metrics")))
        return response.text

    def health(self) -> Flow[HealthResponse]:
        return (yield from self.call(Send("GET", route("health")), HealthResponse))
