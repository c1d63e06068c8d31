"""AsyncCoordinatorClient: the asyncio/trio driver of the flows that CoordinatorClient drives blocking."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar, cast

import anyio
import httpx

from coordinator_client._events import Follower, events_page, long_poll_wait
from coordinator_client._flows import Api
from coordinator_client._scan import AsyncScanPlanStream, ScanScope
from coordinator_client._steps import Flow, Pause, build_request, request_headers
from coordinator_client.errors import CoordinatorClientError, TransportError
from coordinator_client.models import (
    AuditListResponse,
    CleanOrphansResponse,
    CommitHistoryResponse,
    CommitOutcomeResponse,
    CommitRequest,
    CommitResponse,
    CommitsOverviewResponse,
    ConsumerListResponse,
    ConsumerModel,
    CreateTableRequest,
    DeleteTagResponse,
    EventModel,
    EventsResponse,
    ExpireResponse,
    FileListResponse,
    HealthResponse,
    LockListResponse,
    OverviewResponse,
    ReleaseLockResponse,
    RollbackResponse,
    SchemaChange,
    SequenceNumbersResponse,
    SnapshotListResponse,
    SnapshotModel,
    TableListResponse,
    TableResponse,
    TagListResponse,
    TagModel,
    TransactionRequest,
    TransactionResponse,
)

__all__ = ["AsyncCoordinatorClient"]

_T = TypeVar("_T")


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
        self._api = Api(max_unavailable_retries)
        self._http = httpx.AsyncClient(
            base_url=base_url,
            timeout=timeout,
            transport=transport,
            headers=request_headers(user, token, headers),
        )

    async def _run(self, flow: Flow[_T]) -> _T:
        reply: httpx.Response | None = None
        failure: TransportError | None = None
        while True:
            try:
                step = flow.send(reply) if failure is None else flow.throw(failure)
            except StopIteration as stop:
                return cast(_T, stop.value)
            reply, failure = None, None
            if isinstance(step, Pause):
                await anyio.sleep(step.seconds)
                continue
            request = build_request(self._http, step)
            try:
                reply = await self._http.send(request, stream=step.stream)
                if step.stream and not reply.is_success:
                    await reply.aread()  # an error answer is small, and its flow reads it
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

    async def create_table(self, request: CreateTableRequest | Mapping[str, Any]) -> TableResponse:
        return await self._run(self._api.create_table(request))

    async def register_table(self, database: str, name: str, location: str) -> TableResponse:
        request = CreateTableRequest(database=database, name=name, location=location)
        return await self._run(self._api.create_table(request))

    async def list_tables(
        self,
        *,
        limit: int | None = None,
        page_token: str | None = None,
        database: str | None = None,
        name_prefix: str | None = None,
    ) -> TableListResponse:
        """One page of tables in (database, name) order; see CoordinatorClient.list_tables."""
        return await self._run(self._api.list_tables(limit, page_token, database, name_prefix))

    async def iter_tables(
        self, *, page_size: int | None = None, database: str | None = None, name_prefix: str | None = None
    ) -> AsyncIterator[TableResponse]:
        """Every table (of `database`, with `name_prefix`), page after page."""
        token: str | None = None
        while True:
            page = await self.list_tables(
                limit=page_size, page_token=token, database=database, name_prefix=name_prefix
            )
            for table in page.tables:
                yield table
            token = page.next_page_token
            if token is None:
                return

    async def get_table(self, table_id: str) -> TableResponse:
        return await self._run(self._api.get_table(table_id))

    async def drop_table(self, table_id: str, purge: bool = False) -> None:
        """See CoordinatorClient.drop_table."""
        await self._run(self._api.drop_table(table_id, purge))

    async def commit(
        self,
        table_id: str,
        request: CommitRequest | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> CommitResponse:
        """See CoordinatorClient.commit."""
        return await self._run(self._api.commit(table_id, request, idempotency_key))

    async def commit_transaction(
        self, request: TransactionRequest | Mapping[str, Any]
    ) -> TransactionResponse:
        """See CoordinatorClient.commit_transaction."""
        return await self._run(self._api.commit_transaction(request))

    async def commit_history(self, table_id: str, limit: int = 100) -> CommitHistoryResponse:
        return await self._run(self._api.commit_history(table_id, limit))

    async def commit_outcome(
        self, table_id: str, commit_user: str, identifier: int, idempotency_key: str | None = None
    ) -> CommitOutcomeResponse:
        return await self._run(self._api.commit_outcome(table_id, commit_user, identifier, idempotency_key))

    async def list_snapshots(
        self, table_id: str, limit: int = 100, before: int | None = None
    ) -> SnapshotListResponse:
        return await self._run(self._api.list_snapshots(table_id, limit, before))

    async def latest_snapshot(self, table_id: str) -> SnapshotModel:
        return await self._run(self._api.latest_snapshot(table_id))

    async def get_snapshot(self, table_id: str, snapshot_id: int) -> SnapshotModel:
        return await self._run(self._api.get_snapshot(table_id, snapshot_id))

    async def live_files(
        self,
        table_id: str,
        snapshot: int | None = None,
        partition: Mapping[str, Any] | None = None,
        *,
        scope: ScanScope = "all",
    ) -> FileListResponse:
        """See CoordinatorClient.live_files."""
        async with await self.scan_plan(table_id, snapshot, partition, scope=scope) as plan:
            return FileListResponse(snapshot_id=plan.snapshot_id, files=[f async for f in plan])

    async def scan_plan(
        self,
        table_id: str,
        snapshot: int | None = None,
        partition: Mapping[str, Any] | None = None,
        *,
        scope: ScanScope = "all",
    ) -> AsyncScanPlanStream:
        """See CoordinatorClient.scan_plan: `async with await client.scan_plan(...) as plan`, `async for`."""
        return await AsyncScanPlanStream.open(
            await self._run(self._api.scan_plan(table_id, snapshot, partition, scope))
        )

    async def sequence_numbers(
        self, table_id: str, partition: Mapping[str, Any] | None = None
    ) -> SequenceNumbersResponse:
        """See CoordinatorClient.sequence_numbers."""
        return await self._run(self._api.sequence_numbers(table_id, partition))

    async def set_options(
        self, table_id: str, set: Mapping[str, str] | None = None, remove: Sequence[str] | None = None
    ) -> TableResponse:
        """See CoordinatorClient.set_options."""
        return await self._run(self._api.set_options(table_id, set or {}, remove or ()))

    async def alter_table(
        self, table_id: str, changes: Sequence[SchemaChange | Mapping[str, Any]]
    ) -> TableResponse:
        """See CoordinatorClient.alter_table."""
        return await self._run(self._api.alter_table(table_id, changes))

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

    async def locks(self) -> LockListResponse:
        return await self._run(self._api.locks())

    async def release_lock(self, lock_id: str) -> ReleaseLockResponse:
        return await self._run(self._api.release_lock(lock_id))

    async def recent_commits(self, limit: int = 100, table_id: str | None = None) -> CommitsOverviewResponse:
        return await self._run(self._api.recent_commits(limit, table_id))

    async def events_page(
        self,
        after: int | None = None,
        *,
        table: str | None = None,
        database: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        wait: float = 0.0,
    ) -> EventsResponse:
        page = events_page(
            self._api, after, table=table, database=database, kind=kind, limit=limit, wait=wait
        )
        return await self._run(page)

    async def events(
        self,
        after: int | None = None,
        *,
        table: str | None = None,
        database: str | None = None,
        kind: str | None = None,
        wait: float = 30.0,
    ) -> AsyncIterator[EventModel]:
        """As CoordinatorClient.events: every change after `after`, for ever, resumed after failures."""
        follower = Follower(after, table, database, kind, long_poll_wait(wait, self._http.timeout.read))
        while True:
            try:
                page = await self._run(follower.page(self._api))
            except CoordinatorClientError as error:
                await anyio.sleep(follower.retry_delay(error))
                continue
            for event in follower.take(page):
                yield event

    async def audit(self, limit: int = 100) -> AuditListResponse:
        return await self._run(self._api.audit(limit))

    async def overview(
        self,
        minutes: int = 30,
        *,
        limit: int | None = None,
        page_token: str | None = None,
        database: str | None = None,
        name_prefix: str | None = None,
    ) -> OverviewResponse:
        return await self._run(self._api.overview(minutes, limit, page_token, database, name_prefix))

    async def metrics(self) -> str:
        return await self._run(self._api.metrics())

    async def health(self) -> HealthResponse:
        return await self._run(self._api.health())
