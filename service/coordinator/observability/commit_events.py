"""Every answered commit request becomes one log line and a few metric updates.

A commit is counted under the kind of the first snapshot it asks for (ResolvedCommittable.kind, the
same rule the plan follows); a request rejected before it was resolved counts as UNRESOLVED.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from coordinator.domain.committable import ResolvedCommittable
from coordinator.observability.metrics import Metrics
from coordinator_client.models import CommitResponse, ConflictModel

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
        outcome: Outcome,
        *,
        response: CommitResponse | None = None,
        conflict: ConflictModel | None = None,
        error: str | None = None,
    ) -> None:
        """Log and count one answer; `resolved` is None when the request never got that far (invalid).

        Never raises: the answer stands whether or not it could be logged."""
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
