"""Prometheus metrics of one service instance, on a registry of its own (so tests can run several).

Under `coordinator serve --workers N` (workers.py) the parent sets PROMETHEUS_MULTIPROC_DIR before it
starts the workers: prometheus_client then keeps every worker's values in files there, and the exposition
of any worker sums the counters and histograms of all of them, including those of workers that exited.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Gauge, GCCollector, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

SHARED_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"

# Commit phases run from sub-millisecond (conflict check) to seconds (a lock wait under contention).
_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_GROUP_BUCKETS = (1, 2, 4, 8, 16, 32)


class Metrics:
    """The counters and histograms the commit path, the locks and maintenance update."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.shared_dir = os.environ.get(SHARED_DIR_VARIABLE) or None
        """Where the workers of one coordinator keep their values, or None with one process."""
        r = self.registry
        # python_gc_*: the collections this process made, by generation (api/collection_pause.py).
        GCCollector(registry=r)
        self.commits = Counter(
            "coordinator_commits",
            "Commit requests by outcome (committed, deduplicated, rejected, lock_unavailable, invalid, "
            "failed) and kind (APPEND, COMPACT, OVERWRITE).",
            ["outcome", "kind"],
            registry=r,
        )
        self.phase_seconds = Histogram(
            "coordinator_commit_phase_seconds",
            "Time committed commits spent in each phase (validate, lockWait, reconcile, groupWait, "
            "conflictCheck, manifestWrite, commitPoint, publish, total).",
            ["phase"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.lock_wait_seconds = Histogram(
            "coordinator_lock_wait_seconds",
            "Time from asking for a table lock to holding it, by holder (commit, maintenance).",
            ["holder"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.lock_hold_seconds = Histogram(
            "coordinator_lock_hold_seconds",
            "Time a table lock was held, by holder (commit, maintenance).",
            ["holder"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.conflicts = Counter(
            "coordinator_conflicts", "Rejected commits by conflict type.", ["type"], registry=r
        )
        self.snapshots_taken = Counter(
            "coordinator_snapshots_taken",
            "Snapshots of ours whose id a writer outside the coordinator took before we published them; "
            "their commits were decided again.",
            registry=r,
        )
        self.snapshots_overwritten = Counter(
            "coordinator_snapshots_overwritten",
            "Published snapshots of ours that a writer outside the coordinator overwrote on storage; "
            "their changes were applied again on top (an overwrite cannot be, and is lost).",
            registry=r,
        )
        self.dedup_hits = Counter(
            "coordinator_dedup_hits",
            "Resent commits answered from the record (same commitUser + identifier or Idempotency-Key).",
            registry=r,
        )
        self.group_size = Histogram(
            "coordinator_commit_group_size",
            "Commits decided in one lock hold (group commit).",
            buckets=_GROUP_BUCKETS,
            registry=r,
        )
        self.batch_tables = Histogram(
            "coordinator_commit_batch_tables",
            "Tables whose groups were committed in one batch (one lock statement, one commit point, one "
            "finish).",
            buckets=_GROUP_BUCKETS,
            registry=r,
        )
        self.expired_snapshots = Counter(
            "coordinator_expired_snapshots", "Snapshots deleted by expiration.", registry=r
        )
        self.expirations = Counter(
            "coordinator_expirations",
            "Expiration runs that deleted at least one snapshot, by trigger (api, after-commit).",
            ["trigger"],
            registry=r,
        )
        self.maintenance = Counter(
            "coordinator_maintenance_actions",
            "Maintenance actions done (expire, rollback, create-tag, ...).",
            ["action"],
            registry=r,
        )
        self.post_commit_failures = Counter(
            "coordinator_post_commit_failures",
            "Work after a commit was decided that failed, by step (retention, commit-log: its log line "
            "and counters, finish: snapshots marked published, locks released); the commit's answer "
            "did not change.",
            ["step"],
            registry=r,
        )
        self.db_round_trips = Counter(
            "coordinator_db_round_trips",
            "Round trips to the database by engine (durable, bookkeeping, probes): every statement, and "
            "the BEGIN and the COMMIT or ROLLBACK of a transaction not in autocommit.",
            ["engine"],
            registry=r,
        )
        self.transactions = Counter(
            "coordinator_transactions",
            "Multi-table transactions by outcome: committed, deduplicated (a resend), rejected (a "
            "conflict on one of its tables), unavailable (a busy lock or store), invalid or failed.",
            ["outcome"],
            registry=r,
        )
        self.forwarded = Counter(
            "coordinator_commits_forwarded",
            "Commits sent on to the replica holding their table's lock, by result: answered (its answer "
            "passed back) or unreachable (committed here instead).",
            ["result"],
            registry=r,
        )
        self.publisher_lag_events = Gauge(
            "coordinator_publisher_lag_events",
            "Events in the outbox a publisher (nats, webhook-<name>) has not delivered yet, as this "
            "replica last saw it.",
            ["publisher"],
            registry=r,
            multiprocess_mode="livemostrecent",  # the latest look of a live worker
        )
        self.publisher_lag_seconds = Gauge(
            "coordinator_publisher_lag_seconds",
            "Age of the oldest event a publisher has not delivered yet (0 when none), as this replica "
            "last saw it.",
            ["publisher"],
            registry=r,
            multiprocess_mode="livemostrecent",
        )
        self.publisher_delivered = Counter(
            "coordinator_publisher_delivered",
            "Events a publisher delivered from this replica (acknowledged by JetStream, or answered 2xx "
            "by the webhook).",
            ["publisher"],
            registry=r,
        )
        self.publisher_failures = Counter(
            "coordinator_publisher_failures",
            "Failed delivery attempts of a publisher from this replica (each retried after a backoff).",
            ["publisher"],
            registry=r,
        )
        self.commits_refused = Counter(
            "coordinator_commits_refused",
            "Commits and transactions refused with 429 COMMIT_QUEUE_FULL before they queued, because the "
            "commits waiting in this process would take longer to answer than commit_queue_max_wait_seconds, "
            "by reason: table (its table's queue) or process (every table's). Nothing of them was written.",
            ["reason"],
            registry=r,
        )
        for reason in ("table", "process"):
            self.commits_refused.labels(reason)  # exported as 0 before the first refusal
        self.forced_releases = Counter(
            "coordinator_lock_forced_releases", "Locks released by an admin.", registry=r
        )

    def exposition(self) -> bytes:
        """The text format Prometheus scrapes: this process's values, or with workers the sums of all."""
        if self.shared_dir is None:
            return generate_latest(self.registry)
        every_worker = CollectorRegistry()
        MultiProcessCollector(every_worker, path=self.shared_dir)  # type: ignore[no-untyped-call]
        return generate_latest(every_worker)
