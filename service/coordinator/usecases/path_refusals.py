"""The audit trail of paths refused for leaving their table (domain/table_paths).

A name that reaches out of its table is not a mistake a writer makes by accident: every refusal is
written as a warning line of the `coordinator.access` logger (beside the request's access line, under
the same request id, which names the caller), and, where the use case holds a database connection (a
maintenance action under its table's lock), as a row of the audit log with its actor.
"""

from __future__ import annotations

from sqlalchemy import Connection

from coordinator.db import repositories as repo
from coordinator.errors import PathOutsideTable
from coordinator.observability.logs import access_log

ACTION = "refuse-path"
"""The audit log's action for a refused path."""


def log_refusal(table_id: str, refused: PathOutsideTable, *, door: str, actor: str) -> None:
    """The warning line of one refusal; `door` says which request (`rest-commit`, `rollback`...)."""
    access_log.warning(
        "path outside its table refused",
        extra={
            "audit": ACTION,
            "table": table_id,
            "door": door,
            "actor": actor,
            "field": refused.field,
            "reason": refused.message,
        },
    )


def audit_refusal(
    conn: Connection, at: float, table_id: str, refused: PathOutsideTable, *, door: str, actor: str
) -> None:
    """The log line and the audit-log row of one refusal, in the caller's transaction."""
    log_refusal(table_id, refused, door=door, actor=actor)
    repo.insert_audit(
        conn,
        at=at,
        actor=actor[:200],
        action=ACTION,
        target=table_id,
        details={"door": door, "field": refused.field, "reason": refused.message},
    )
