"""The on-call overview: totals over every table, one page of tables with their size and commit outcomes,
throughput, phase latency and the latest conflicts.

Everything comes from the database: a table's size is what its latest commit point recorded
(domain.table_stats), so no request reads storage, and the first call after a restart costs what every
other call costs. The tables come one page at a time (as GET /tables pages them, with the same filters),
so with 10,000 tables the answer stays small and its commit counts are counted for the page only; the
totals still cover every table.

One part is this process's own and not in the database: its commit queue and the commits it refused with
429 (commit/admission.py), since a refused commit is never recorded.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from sqlalchemy import Engine

from coordinator.clock import Clock
from coordinator.commit.admission import Admission
from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.db.scope import TableScope
from coordinator.usecases.table_pages import TableEntry
from coordinator.usecases.tables import Tables
from coordinator_client.models import (
    CommitQueueModel,
    ConflictEventModel,
    MinuteCountModel,
    OverviewResponse,
    PhaseLatencyModel,
    TableStatsModel,
    TableTotalsModel,
)

TIMINGS_READ_LIMIT = 20_000
"""Percentiles come from at most the newest this many committed commits of the window: enough for a
stable p95, and a bound on what one dashboard refresh reads from a busy history."""

LATEST_CONFLICTS = 20


class Overview:
    """Builds OverviewResponse from the database alone."""

    def __init__(self, engine: Engine, tables: Tables, clock: Clock, admission: Admission) -> None:
        self._engine = engine
        self._tables = tables
        self._clock = clock
        self._admission = admission

    def overview(
        self,
        window_minutes: int,
        *,
        limit: int,
        page_token: str | None = None,
        database: str | None = None,
        name_prefix: str | None = None,
        scope: TableScope | None = None,
    ) -> OverviewResponse:
        """Of every table, or (`scope`) of those a token limited by a grant may read: its totals,
        throughput, latency and conflicts are those of its tables alone, and it gets no commit queue.

        Raises:
            InvalidRequest: a bad page token.
        """
        now = self._clock.now()
        this_minute = math.floor(now / 60) * 60
        since = this_minute - (window_minutes - 1) * 60
        page = self._tables.page(
            limit=limit, page_token=page_token, database=database, name_prefix=name_prefix, scope=scope
        )
        ids = [e.id for e in page.entries]
        with read_only(self._engine) as conn:
            totals = repo.table_totals(conn, scope)
            counts = repo.table_commit_counts(conn, ids)
            by_type = repo.rejections_by_type(conn, ids)
            per_minute = repo.commit_counts_per_minute(conn, since, scope)
            timings = repo.committed_timings(conn, since, TIMINGS_READ_LIMIT, scope)
            rejections = repo.latest_rejections(conn, LATEST_CONFLICTS, scope)
        return OverviewResponse(
            now=now,
            window_minutes=window_minutes,
            totals=TableTotalsModel(
                tables=totals.tables,
                unknown=totals.unknown,
                total_record_count=totals.total_record_count,
                file_count=totals.file_count,
                file_bytes=totals.file_bytes,
            ),
            tables=[_table_stats(e, counts.get(e.id), by_type.get(e.id, {})) for e in page.entries],
            next_page_token=page.next_page_token,
            commits_per_minute=_per_minute(per_minute, since, window_minutes),
            phase_latency_ms=_latencies(timings),
            conflicts=[
                ConflictEventModel(
                    table_id=c.table_id,
                    commit_user=c.commit_user,
                    identifier=c.identifier,
                    type=str((c.conflict or {}).get("type", "UNKNOWN")),
                    message=str((c.conflict or {}).get("message", "")),
                    at=c.created_at,
                )
                for c in rejections
            ],
            commit_queue=self._commit_queue(window_minutes) if scope is None else None,
        )

    def _commit_queue(self, window_minutes: int) -> CommitQueueModel:
        state = self._admission.state(window_minutes)
        return CommitQueueModel(
            waiting=state.waiting,
            wait_seconds=round(state.wait_seconds, 3),
            limit_seconds=state.limit_seconds,
            refused=dict(state.refused),
            refused_last_minute=state.refused_last_minute,
        )


def _table_stats(
    entry: TableEntry, counts: repo.TableCommitCounts | None, conflicts: dict[str, int]
) -> TableStatsModel:
    return TableStatsModel(
        table_id=entry.id,
        latest_snapshot_id=entry.latest_snapshot_id,
        total_record_count=entry.stats.total_record_count,
        file_count=entry.stats.file_count,
        file_bytes=entry.stats.file_bytes,
        committed=counts.committed if counts else 0,
        rejected=counts.rejected if counts else 0,
        overwritten=counts.overwritten if counts else 0,
        conflicts=conflicts,
        last_commit_at=entry.last_commit_at,
    )


def _per_minute(
    counts: Iterable[tuple[float, str, int]], since: float, window_minutes: int
) -> list[MinuteCountModel]:
    """One entry per minute of the window, oldest first, minutes without commits included."""
    minutes = [since + 60 * i for i in range(window_minutes)]
    committed = dict.fromkeys(minutes, 0)
    rejected = dict.fromkeys(minutes, 0)
    for minute, outcome, count in counts:
        if outcome == "committed" and minute in committed:
            committed[minute] += count
        elif outcome == "rejected" and minute in rejected:
            rejected[minute] += count
    return [MinuteCountModel(minute=m, committed=committed[m], rejected=rejected[m]) for m in minutes]


def _latencies(timings: Iterable[dict[str, float]]) -> dict[str, PhaseLatencyModel]:
    by_phase: dict[str, list[float]] = {}
    for commit in timings:
        for phase, ms in commit.items():
            by_phase.setdefault(phase, []).append(ms)
    latencies = {}
    for phase, values in sorted(by_phase.items()):
        values.sort()
        latencies[phase] = PhaseLatencyModel(
            count=len(values), p50=_percentile(values, 50), p95=_percentile(values, 95), max=values[-1]
        )
    return latencies


def _percentile(ordered: list[float], p: float) -> float:
    """Nearest rank: a value some commit really took, never an interpolation between two."""
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]
