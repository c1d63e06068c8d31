"""Access control: bearer tokens (only their secret's SHA-256), and the audit log of administrative
actions that belong to no table's history."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, insert, select, update

from coordinator.db.models import AuditRow, TokenRow
from coordinator.db.repositories._rows import first


def insert_token(
    conn: Connection,
    *,
    token_id: str,
    name: str,
    role: str,
    database: str | None,
    table_name: str | None,
    secret_sha256: str,
    created_at: float,
) -> None:
    conn.execute(
        insert(TokenRow).values(
            id=token_id,
            name=name,
            role=role,
            database=database,
            table_name=table_name,
            secret_sha256=secret_sha256,
            created_at=created_at,
            revoked_at=None,
        )
    )


def get_token(conn: Connection, token_id: str) -> TokenRow | None:
    row = first(conn, select(TokenRow.__table__).where(TokenRow.id == token_id))
    return TokenRow(**row) if row is not None else None


def list_tokens(conn: Connection) -> list[TokenRow]:
    """Oldest first, revoked ones included."""
    rows = conn.execute(select(TokenRow.__table__).order_by(TokenRow.created_at)).mappings().all()
    return [TokenRow(**r) for r in rows]


def revoke_token(conn: Connection, token_id: str, *, now: float) -> bool:
    """False when no live token has this id."""
    result = conn.execute(
        update(TokenRow).where(TokenRow.id == token_id, TokenRow.revoked_at.is_(None)).values(revoked_at=now)
    )
    return bool(result.rowcount == 1)


def insert_audit(
    conn: Connection, *, at: float, actor: str, action: str, target: str, details: dict[str, Any] | None
) -> None:
    conn.execute(
        insert(AuditRow).values(
            at=at,
            actor=actor,
            action=action,
            target=target,
            details=details,
        )
    )


def latest_audit(conn: Connection, limit: int) -> list[AuditRow]:
    """The newest `limit` entries of the audit log, newest first."""
    rows = conn.execute(select(AuditRow.__table__).order_by(AuditRow.id.desc()).limit(limit)).mappings()
    return [AuditRow(**r) for r in rows]
