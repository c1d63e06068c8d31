"""The audit log: administrative actions that belong to no table's history (forced lock releases,
token changes), who did them and when."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from coordinator.clock import Clock
from coordinator.db import repositories as repo


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: float
    actor: str
    action: str
    target: str
    details: dict[str, Any] | None


class AuditLog:
    def __init__(self, engine: Engine, clock: Clock | None = None) -> None:
        self._clock = clock or Clock()
        self._engine = engine

    def record(self, actor: str, action: str, target: str, details: dict[str, Any] | None = None) -> None:
        with self._engine.begin() as conn:
            repo.insert_audit(
                conn, at=self._clock.now(), actor=actor, action=action, target=target, details=details
            )

    def latest(self, limit: int) -> list[AuditEntry]:
        """Newest first."""
        with self._engine.connect() as conn:
            rows = repo.latest_audit(conn, limit)
        return [AuditEntry(r.id, r.at, r.actor, r.action, r.target, r.details) for r in rows]
