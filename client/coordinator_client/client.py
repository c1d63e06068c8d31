"""CoordinatorClient and AsyncCoordinatorClient: typed access to the coordinator's API v1.

Both are thin drivers of the same flows (coordinator_client._flows, whose docstring states the retry
rules). CoordinatorClient performs their steps with httpx.Client and time.sleep; AsyncCoordinatorClient
(in coordinator_client._async_client) with httpx.AsyncClient and anyio.sleep. A transport failure is
thrown into the flow as a TransportError at the step that caused it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any, TypeVar, cast

import httpx

from coordinator_client._async_client import AsyncCoordinatorClient
from coordinator_client._events import Follower, events_page, long_poll_wait
from coordinator_client._flows import Api
from coordinator_client._maintenance_calls import MaintenanceCalls
from coordinator_client._scan import ScanPlanStream, ScanScope
from coordinator_client._steps import Flow, Pause, build_request, request_headers
from coordinator_client.errors import CoordinatorClientError, TransportError
from coordinator_client.models import (
    AuditListResponse,
    CommitHistoryResponse,
    CommitOutcomeResponse,
    CommitRequest,
    CommitResponse,
    CommitsOverviewResponse,
    CreateTableRequest,
    EventModel,
    EventsResponse,
    FileListResponse,
    HealthResponse,
    LockListResponse,
    OverviewResponse,
    ReleaseLockResponse,
    SequenceNumbersResponse,
    SnapshotListResponse,
    SnapshotModel,
    TableListResponse,
    TableResponse,
    TransactionRequest,
    TransactionResponse,
)

__all__ = ["AsyncCoordinatorClient", "CoordinatorClient"]

_T = TypeVar("_T")


class CoordinatorClient(MaintenanceCalls):
    """Blocking client of the coordinator's API v1. Thread-safe like the httpx.Client it wraps.

    Every method raises the errors of `coordinator_client.errors`; see coordinator_client._flows for
    what is retried. `token` is the bearer token a service with access control needs (`coordinator tokens
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
        self._api = Api(max_unavailable_retries)
        self._token = token
        self._http = httpx.Client(
            base_url=base_url,
            timeout=timeout,
            transport=transport,
            headers=request_headers(user, token, headers),
        )

    @property
    def base_url(self) -> str:
        return str(self._http.base_url)

    @property
    def timeout(self) -> float | None:
        """Seconds to wait for an answer."""
        return self._http.timeout.read

    @property
    def token(self) -> str | None:
        """The bearer token this client sends: what a Spark job's data source options pass on."""
        return self._token

    def _run(self, flow: Flow[_T]) -> _T:
        reply: httpx.Response | None = None
        failure: TransportError | None = None
        while True:
            try:
                step = flow.send(reply) if failure is None else flow.throw(failure)
            except StopIteration as stop:
                return cast(_T, stop.value)
            reply, failure = None, None
            if isinstance(step, Pause):
                time.sleep(step.seconds)
                continue
            request = build_request(self._http, step)
            try:
                reply = self._http.send(request, stream=step.stream)
                if step.stream and not reply.is_success:
                    reply.read()  # an error answer is small, and its flow reads it
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

    def create_table(self, request: CreateTableRequest | Mapping[str, Any]) -> TableResponse:
        """Create a table (or register one by `location`); Conflict if the name is taken."""
        return self._run(self._api.create_table(request))

    def register_table(self, database: str, name: str, location: str) -> TableResponse:
        """Register an existing Paimon table stored at `location`."""
        return self._run(
            self._api.create_table(CreateTableRequest(database=database, name=name, location=location))
        )

    def list_tables(
        self,
        *,
        limit: int | None = None,
        page_token: str | None = None,
        database: str | None = None,
        name_prefix: str | None = None,
    ) -> TableListResponse:
        """One page of tables in (database, name) order (the service's default page size when `limit` is
        None); pass the answer's `next_page_token` as `page_token` for the next page."""
        return self._run(self._api.list_tables(limit, page_token, database, name_prefix))

    def iter_tables(
        self, *, page_size: int | None = None, database: str | None = None, name_prefix: str | None = None
    ) -> Iterator[TableResponse]:
        """Every table (of `database`, with `name_prefix`), page after page."""
        token: str | None = None
        while True:
            page = self.list_tables(
                limit=page_size, page_token=token, database=database, name_prefix=name_prefix
            )
            yield from page.tables
            token = page.next_page_token
            if token is None:
                return

    def get_table(self, table_id: str) -> TableResponse:
        return self._run(self._api.get_table(table_id))

    def drop_table(self, table_id: str, purge: bool = False) -> None:
        """Forget the table; its files stay. With `purge`, the folder of a table the coordinator created
        is deleted too; a table registered by location is never purged (Conflict, code PURGE_REFUSED)."""
        self._run(self._api.drop_table(table_id, purge))

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

    def commit_transaction(self, request: TransactionRequest | Mapping[str, Any]) -> TransactionResponse:
        """Commit several tables' changes all or nothing (POST /transactions); a lost answer is resolved
        by asking, as for a commit.

        Raises:
            Conflict: a conflict on one table (`.conflict.table` names it); no table changed.
            CommitStateUnknown: the outcome could not be determined; resend the same transaction later.
        """
        return self._run(self._api.commit_transaction(request))

    def commit_history(self, table_id: str, limit: int = 100) -> CommitHistoryResponse:
        """Newest first."""
        return self._run(self._api.commit_history(table_id, limit))

    def commit_outcome(
        self, table_id: str, commit_user: str, identifier: int, idempotency_key: str | None = None
    ) -> CommitOutcomeResponse:
        """committed, rejected or unknown (the service never received it); a key asks about that request."""
        return self._run(self._api.commit_outcome(table_id, commit_user, identifier, idempotency_key))

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
        self,
        table_id: str,
        snapshot: int | None = None,
        partition: Mapping[str, Any] | None = None,
        *,
        scope: ScanScope = "all",
    ) -> FileListResponse:
        """The live data files at `snapshot` (the latest by default), optionally of one partition, all in
        one list; `scan_plan` hands them over one by one instead. `scope` as for scan_plan."""
        with self.scan_plan(table_id, snapshot, partition, scope=scope) as plan:
            return FileListResponse(snapshot_id=plan.snapshot_id, files=list(plan))

    def scan_plan(
        self,
        table_id: str,
        snapshot: int | None = None,
        partition: Mapping[str, Any] | None = None,
        *,
        scope: ScanScope = "all",
    ) -> ScanPlanStream:
        """The live data files at `snapshot` (the latest by default), optionally of one partition, streamed:
        the service reads only the manifests that may hold the partition, and neither side holds the
        whole plan. Use as a context manager and iterate it once::

            with client.scan_plan("db.t") as plan:
                pinned = plan.snapshot_id
                for f in plan: ...

        With `scope="delta"` (and a `snapshot`), only the files that snapshot adds (its delta manifests'
        ADD entries less the files it deletes again): the changes a streaming reader takes of it.

        Raises:
            NotFound, BadRequest (e.g. an unknown partition key, or scope delta without a snapshot) before
            the first file; StreamCutOff, an ApiError or a TransportError while iterating when the plan
            does not arrive whole.
        """
        return ScanPlanStream(self._run(self._api.scan_plan(table_id, snapshot, partition, scope)))

    def sequence_numbers(
        self, table_id: str, partition: Mapping[str, Any] | None = None
    ) -> SequenceNumbersResponse:
        """The highest sequence number per (partition, bucket) of the latest live files, optionally of
        one partition: what a writer numbers its next files after."""
        return self._run(self._api.sequence_numbers(table_id, partition))

    def locks(self) -> LockListResponse:
        """Held locks: owner, epoch, acquired and expiry, and the commits waiting behind each."""
        return self._run(self._api.locks())

    def release_lock(self, lock_id: str) -> ReleaseLockResponse:
        """Force-release a stuck lock (admin); its holder's commit is then rejected. Audited."""
        return self._run(self._api.release_lock(lock_id))

    def recent_commits(self, limit: int = 100, table_id: str | None = None) -> CommitsOverviewResponse:
        """Commits in flight (with their phase) and the latest recorded ones, of all tables or one."""
        return self._run(self._api.recent_commits(limit, table_id))

    def events_page(
        self,
        after: int | None = None,
        *,
        table: str | None = None,
        database: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        wait: float = 0.0,
    ) -> EventsResponse:
        """One page of the commit event feed after the cursor `after` (None: from the oldest kept)."""
        page = events_page(
            self._api, after, table=table, database=database, kind=kind, limit=limit, wait=wait
        )
        return self._run(page)

    def events(
        self,
        after: int | None = None,
        *,
        table: str | None = None,
        database: str | None = None,
        kind: str | None = None,
        wait: float = 30.0,
    ) -> Iterator[EventModel]:
        """Every change to a table after the cursor `after` (None: from the oldest kept), in commit
        order, for ever: long polls, resumed from the last event handed out after a lost connection, a
        503 or a 5xx (coordinator_client._events). Raises ApiError 410 CURSOR_EXPIRED when `after` is
        older than the feed's retention."""
        follower = Follower(after, table, database, kind, long_poll_wait(wait, self.timeout))
        while True:
            try:
                page = self._run(follower.page(self._api))
            except CoordinatorClientError as error:
                time.sleep(follower.retry_delay(error))
                continue
            yield from follower.take(page)

    def audit(self, limit: int = 100) -> AuditListResponse:
        """Forced lock releases and token changes, newest first."""
        return self._run(self._api.audit(limit))

    def overview(
        self,
        minutes: int = 30,
        *,
        limit: int | None = None,
        page_token: str | None = None,
        database: str | None = None,
        name_prefix: str | None = None,
    ) -> OverviewResponse:
        """The dashboard's data: totals, one page of tables (paged as list_tables pages), commits per
        minute, latency by phase, latest conflicts."""
        return self._run(self._api.overview(minutes, limit, page_token, database, name_prefix))

    def metrics(self) -> str:
        """The Prometheus text exposition."""
        return self._run(self._api.metrics())

    def health(self) -> HealthResponse:
        return self._run(self._api.health())
