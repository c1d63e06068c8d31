"""Every answered commit request becomes one log line and a few metric updates."""

from __future__ import annotations

import logging
from typing import Any, Literal

from coordinator.observability.metrics import Metrics
from coordinator_client.models import CommitRequest, CommitResponse, ConflictModel

log = logging.getLogger("coordinator.commits")

Outcome = Literal["committed", "deduplicated", "rejected", "lock_unavailable", "invalid", "failed"]


def request_kind(request: CommitRequest) -> str:
    """The kind of change asked for: OVERWRITE, COMPACT (only compaction changes) or APPEND."""
    if request.overwrite is not None:
        return "OVERWRITE"
    if request.messages and not any(m.new_files or m.deleted_files for m in request.messages):
        return "COMPACT"
    return "APPEND"


class CommitEvents:
    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def answered(
        self,
        table_id: str,
        request: CommitRequest,
        outcome: Outcome,
        *,
        response: CommitResponse | None = None,
        conflict: ConflictModel | None = None,
        error: str | None = None,
    ) -> None:
        metrics = self._metrics
        metrics.commits.labels(outcome, request_kind(request)).inc()
        fields: dict[str, Any] = {
            "table": table_id,
            "commitUser": request.commit_user,
            "identifier": request.identifier,
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
