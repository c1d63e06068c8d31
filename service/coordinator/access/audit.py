"""The audit log: administrative actions that belong to no table's history (forced lock releases,
token changes), who did them and when."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, insert, select

from coordinator.db.models import AuditRow


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: float
    actor: str
    action: str
    target: str
    details: dict[str, Any] | None


class AuditLog:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def record(self, actor: str, action: str, target: str, details: dict[str, Any] | None = None) -> None:
        with self._engine.begin() as conn:
            conn.execute(
                insert(AuditRow).values(
                    at=time.time(),
                    actor=actor,
                    action=action,
                    target=target,
                    details=json.dumps(details) if details is not None else None,
                )
            )

    def latest(self, limit: int) -> list[AuditEntry]:
        """Newest first."""
        with self._engine.connect() as conn:
            query = select(AuditRow.__table__).order_by(AuditRow.id.desc()).limit(limit)
            rows = conn.execute(query).mappings().all()
        return [
            AuditEntry(
                r["id"],
                r["at"],
                r["actor"],
                r["action"],
                r["target"],
                json.loads(r["details"]) if r["details"] else None,
            )
            for r in rows
        ]
