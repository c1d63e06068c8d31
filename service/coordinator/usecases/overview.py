"""The on-call overview: every table's size and commit outcomes, throughput, phase latency, conflicts."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Engine

from coordinator.clock import Clock
from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.errors import SnapshotNotFound, TableNotFound
from coordinator.usecases.reads import Reads
from coordinator_client.models import (
    ConflictEventModel,
    MinuteCountModel,
    OverviewResponse,
    PhaseLatencyModel,
    TableStatsModel,
)

TIMINGS_READ_LIMIT = 20_000
"""Percentiles come from at most the newest this many committed commits of the window: enough for a
stable p95, and a bound on what one dashboard refresh reads from a busy history."""

LATEST_CONFLICTS = 20


@dataclass(frozen=True)
class _TableSize:
    total_record_count: int
    file_count: int
    file_bytes: int


_EMPTY = _TableSize(0, 0, 0)


class Overview:
    """Builds OverviewResponse; keep one per service, as it caches what it read from storage."""

    def __init__(self, engine: Engine, reads: Reads, clock: Clock) -> None:
        self._engine = engine
        self._reads = reads
        self._clock = clock
        # Table sizes by (table uuid, snapshot id): a snapshot never changes, and listing its live files
        # reads every manifest, too much for a page that refreshes every few seconds. The uuid tells a
        # re-created table from the one it replaced.
        self._sizes: dict[tuple[str, int], _TableSize] = {}

    def overview(self, window_minutes: int) -> OverviewResponse:
        now = self._clock.now()
        this_minute = math.floor(now / 60) * 60
        since = this_minute - (window_minutes - 1) * 60
        with read_only(self._engine) as conn:
            counts = repo.table_commit_counts(conn)
            by_type = repo.rejections_by_type(conn)
            per_minute = repo.commit_counts_per_minute(conn, since)
            timings = repo.committed_timings(conn, since, TIMINGS_READ_LIMIT)
            rejections = repo.latest_rejections(conn, LATEST_CONFLICTS)
        return OverviewResponse(
            now=now,
            window_minutes=window_minutes,
            tables=self._tables(counts, by_type),
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
        )

    def _tables(
        self, counts: list[repo.TableCommitCounts], by_type: dict[str, dict[str, int]]
    ) -> list[TableStatsModel]:
        sizes: dict[tuple[str, int], _TableSize] = {}
        stats = []
        for t in counts:
            key = (t.uuid, t.latest_snapshot_id)
            try:
                sizes[key] = self._sizes.get(key) or self._size(t.table_id, t.latest_snapshot_id)
            except (TableNotFound, SnapshotNotFound):
                continue  # dropped or rolled back since the query: the next refresh shows it as it is now
            stats.append(
                TableStatsModel(
                    table_id=t.table_id,
                    latest_snapshot_id=t.latest_snapshot_id,
                    total_record_count=sizes[key].total_record_count,
                    file_count=sizes[key].file_count,
                    file_bytes=sizes[key].file_bytes,
                    committed=t.committed,
                    rejected=t.rejected,
                    conflicts=by_type.get(t.table_id, {}),
                    last_commit_at=t.last_commit_at,
                )
            )
        self._sizes = sizes  # only the tables' current snapshots stay cached
        return stats

    def _size(self, table_id: str, snapshot_id: int) -> _TableSize:
        if snapshot_id == 0:
            return _EMPTY
        snapshot, entries = self._reads.live_entries(table_id, snapshot_id)
        assert snapshot is not None  # asked for a snapshot by id
        return _TableSize(snapshot.total_record_count, len(entries), sum(e.file.file_size for e in entries))


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
