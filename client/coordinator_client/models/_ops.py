"""Operations: locks and their waiters, commits in flight, the audit log, the dashboard overview, health."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from coordinator_client.models._base import _Model
from coordinator_client.models._commits import CommitRecordModel


class LockWaiterModel(_Model):
    """A commit of this service instance waiting in line for a table's lock."""

    table_id: str
    commit_user: str
    identifier: int
    waiting_ms: float


class LockModel(_Model):
    lock_id: str
    table_id: str | None = Field(default=None, description="the table a `table:` lock guards")
    owner: str
    epoch: int
    acquired_at: float = Field(description="epoch seconds, lock backend clock")
    expires_at: float = Field(description="epoch seconds, lock backend clock")
    holder_url: str | None = Field(
        default=None, description="where the holder answers: other replicas forward commits to it"
    )
    waiters: list[LockWaiterModel] = Field(
        default_factory=list, description="commits of this instance queued behind the holder"
    )


class LockListResponse(_Model):
    now: float = Field(description="epoch seconds on the lock backend's clock, for ages and time to expiry")
    locks: list[LockModel]


class ReleaseLockResponse(_Model):
    """What a forced release took away: the holder and its epoch; the next holder's epoch is larger."""

    lock_id: str
    released: bool
    owner: str | None = None
    epoch: int | None = None


class InFlightCommitModel(_Model):
    """A commit this service instance is working on, and the phase it is in."""

    table_id: str
    commit_user: str
    identifier: int
    phase: str = Field(
        description="lockWait, reconcile, conflictCheck, manifestWrite, commitPoint or publish"
    )
    started_at: float = Field(description="epoch seconds")
    elapsed_ms: float
    timings: dict[str, float] = Field(description="phases finished so far (ms)")
    tables: list[str] | None = Field(
        default=None, description="a multi-table transaction's tables (tableId is the first of them)"
    )


class CommitsOverviewResponse(_Model):
    in_flight: list[InFlightCommitModel]
    recent: list[CommitRecordModel] = Field(description="newest first, all tables")


class AuditEntryModel(_Model):
    """An administrative action outside any table's history: a forced lock release, a token change."""

    id: int
    at: float = Field(description="epoch seconds")
    actor: str
    action: str
    target: str
    details: dict[str, Any] | None = None


class AuditListResponse(_Model):
    entries: list[AuditEntryModel] = Field(description="newest first")


class TableStatsModel(_Model):
    """Per-table counters for dashboards: the latest snapshot's size (as recorded at its commit; null
    while not known) and the commit outcomes so far."""

    table_id: str
    latest_snapshot_id: int
    total_record_count: int | None
    file_count: int | None = Field(description="live data files at the latest snapshot")
    file_bytes: int | None = Field(description="their total size")
    committed: int
    rejected: int
    overwritten: int = Field(
        default=0,
        description="acknowledged commits whose snapshot a writer outside the coordinator overwrote on "
        "storage; each was applied again as a new snapshot",
    )
    conflicts: dict[str, int] = Field(description="rejections by conflict type")
    last_commit_at: float | None = Field(default=None, description="epoch seconds")


class MinuteCountModel(_Model):
    minute: float = Field(description="start of the minute, epoch seconds")
    committed: int
    rejected: int


class PhaseLatencyModel(_Model):
    count: int
    p50: float
    p95: float
    max: float


class ConflictEventModel(_Model):
    table_id: str
    commit_user: str
    identifier: int
    type: str
    message: str
    at: float = Field(description="epoch seconds")


class TableTotalsModel(_Model):
    """Every table of the coordinator, summed."""

    tables: int
    unknown: int = Field(description="tables whose size is not known yet (not in the sums)")
    total_record_count: int
    file_count: int
    file_bytes: int


class CommitQueueModel(_Model):
    """The commit queue of the service instance that answered (each replica has its own): the commits
    waiting in it, and the ones it refused with 429 COMMIT_QUEUE_FULL (counted in memory, never recorded)."""

    waiting: int = Field(description="commits and transactions admitted and not answered yet")
    wait_seconds: float = Field(
        description="the longest a new commit would wait now, on its table or over the instance; above "
        "limitSeconds it is refused"
    )
    limit_seconds: float = Field(description="commit_queue_max_wait_seconds, by default the lock lease")
    refused: dict[str, int] = Field(description="refusals in the window, by reason: table or process")
    refused_last_minute: int = Field(description="refusals in the current minute")


class OverviewResponse(_Model):
    """What the dashboard shows, over the last `windowMinutes` of commits; `tables` is one page of
    tables in (database, name) order, as GET /tables pages them."""

    now: float = Field(description="epoch seconds")
    window_minutes: int
    totals: TableTotalsModel
    tables: list[TableStatsModel]
    next_page_token: str | None = Field(
        default=None, description="page_token of the next page of tables; null on the last page"
    )
    commits_per_minute: list[MinuteCountModel] = Field(description="oldest first, one entry per minute")
    phase_latency_ms: dict[str, PhaseLatencyModel] = Field(description="committed commits, by phase")
    conflicts: list[ConflictEventModel] = Field(description="the latest rejections, newest first")
    commit_queue: CommitQueueModel | None = Field(
        default=None,
        description="this instance's commit queue and refusals; null for a token limited by a grant (the "
        "queue is every table's)",
    )


class HealthResponse(_Model):
    """200 when the database and the warehouse both answer; 503 with the same body when one does not."""

    status: Literal["ok", "unavailable"]
    database: str | None = None
    """The database's dialect (sqlite, postgresql, mysql); to admins only."""
    warehouse: str | None = None
    """The warehouse's root location, without connection options or credentials; to admins only."""
    checks: dict[str, str] = Field(default_factory=dict)
    """`database` and `warehouse`: "ok" or "unavailable"; to admins, why that part failed."""
