"""Every answered commit request, and every answered transaction, becomes one log line and a few metric
updates: the one place the commit pipeline logs and counts its answers.

A commit is counted under the kind of the first snapshot it asks for (ResolvedCommittable.kind, the
same rule the plan follows); a request rejected before it was resolved counts as UNRESOLVED.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from coordinator.domain.committable import ResolvedCommittable
from coordinator.errors import (
    CommitConflict,
    CoordinatorError,
    DataFileMissing,
    InvalidRequest,
    LockUnavailable,
    TableNotFound,
    Unavailable,
)
from coordinator.observability.metrics import Metrics
from coordinator_client.models import CommitResponse, ConflictModel, TransactionRequest, TransactionResponse

log = logging.getLogger("coordinator.commits")

Outcome = Literal["committed", "deduplicated", "rejected", "lock_unavailable", "invalid", "failed"]


class CommitEvents:
    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def answered(
        self,
        table_id: str,
        who: tuple[str, int],
        resolved: ResolvedCommittable | None,
        *,
        outcome: Outcome | None = None,
        response: CommitResponse | None = None,
        error: BaseException | None = None,
    ) -> None:
        """Log and count one answer, a response or an error; `resolved` is None when the request never got
        that far (invalid).

        Never raises: the answer stands whether or not it could be logged."""
        conflict: ConflictModel | None = None
        message: str | None = None
        if isinstance(error, CommitConflict):
            outcome, conflict = "rejected", error.conflict
        elif isinstance(error, LockUnavailable):
            outcome, message = "lock_unavailable", error.message
        elif isinstance(error, (InvalidRequest, TableNotFound, DataFileMissing)):
            outcome, message = "invalid", error.message
        elif error is not None:
            outcome, message = "failed", repr(error)
        assert outcome is not None
        self._log_answer(table_id, who, resolved, outcome, response, conflict, message)

    def _log_answer(
        self,
        table_id: str,
        who: tuple[str, int],
        resolved: ResolvedCommittable | None,
        outcome: Outcome,
        response: CommitResponse | None,
        conflict: ConflictModel | None,
        error: str | None,
    ) -> None:
        try:
            metrics = self._metrics
            kind = resolved.kind.value if resolved is not None else "UNRESOLVED"
            metrics.commits.labels(outcome, kind).inc()
            fields: dict[str, Any] = {
                "table": table_id,
                "commitUser": who[0],
                "identifier": who[1],
                "outcome": outcome,
            }
            if response is not None:
                fields["snapshotIds"] = [s.id for s in response.snapshots]
                if outcome == "deduplicated":
                    metrics.dedup_hits.inc()
                else:
                    fields["timings"] = response.timings
                    fields["groupSize"] = response.group_size
                    for phase, ms in response.timings.items():
                        metrics.phase_seconds.labels(phase).observe(ms / 1000)
            if conflict is not None:
                metrics.conflicts.labels(conflict.type).inc()
                fields["conflictType"] = conflict.type
                fields["conflict"] = conflict.message
            if error is not None:
                fields["error"] = error
            level = logging.INFO if outcome in ("committed", "deduplicated") else logging.WARNING
            log.log(level, "commit %s", outcome, extra=fields)
        except Exception:
            log.exception("logging the answer to a commit to %s failed; the answer stands", table_id)
            self._metrics.post_commit_failures.labels("commit-log").inc()

    def transaction_answered(
        self,
        request: TransactionRequest,
        *,
        response: TransactionResponse | None = None,
        error: BaseException | None = None,
    ) -> None:
        """Count a transaction's answer by its outcome, and log the ones that stand."""
        if isinstance(error, CommitConflict):
            outcome = "rejected"
        elif isinstance(error, Unavailable):  # a lock stayed busy, or the store failed: 503, to be sent again
            outcome = "unavailable"
        elif isinstance(error, CoordinatorError):
            outcome = "invalid"
        elif error is not None:
            outcome = "failed"
        else:
            assert response is not None
            outcome = "deduplicated" if response.deduplicated else "committed"
        self._metrics.transactions.labels(outcome).inc()
        if response is not None:
            log.info(
                "transaction %s/%d %s: %s",
                request.commit_user,
                request.identifier,
                outcome,
                ", ".join(f"{t.table} {[s.id for s in t.snapshots]}" for t in response.tables),
            )
