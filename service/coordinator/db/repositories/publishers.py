"""Publishers' positions, leases and dead letters (tables `event_publishers`, `event_dead_letters`).

One row per publisher, shared by every replica. A replica publishes only while it holds the row's lease
(owner + epoch, expiring on the database clock); taking an expired lease bumps the epoch, and every
write of the holder is conditional on its owner and epoch, so a replica that lost the lease (paused,
partitioned) moves nothing once another took over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, Row, delete, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError

from coordinator.db.engine import autocommit, now_ms
from coordinator.db.models import DeadLetterRow, EventRow, PublisherRow

ERROR_CHARS = 500


@dataclass(frozen=True)
class PublisherLease:
    """Proof of being the replica that publishes for `name`, until the database clock passes the lease."""

    name: str
    owner: str
    epoch: int


class PublisherLeases:
    """Take, renew and check the lease of a publisher's row; statements built once per engine."""

    def __init__(self, engine: Engine, lease_seconds: float) -> None:
        self._engine = engine
        self._lease_ms = int(lease_seconds * 1000)
        now = now_ms(engine).text
        self._take_over = text(
            f"UPDATE event_publishers SET owner = :owner, epoch = epoch + 1, "
            f"lease_expires_ms = {now} + :lease WHERE name = :name "
            f"AND (owner IS NULL OR lease_expires_ms < {now})"
        )
        self._renew = text(
            f"UPDATE event_publishers SET lease_expires_ms = {now} + :lease WHERE name = :name "
            f"AND owner = :owner AND epoch = :epoch AND lease_expires_ms >= {now}"
        )

    def register(self, name: str, kind: str, target: str) -> None:
        """The publisher's row, created at cursor 0 if missing; its target updated if it changed."""
        with autocommit(self._engine) as conn:
            exists = conn.execute(select(PublisherRow.name).where(PublisherRow.name == name)).first()
            if exists is not None:
                conn.execute(
                    update(PublisherRow).where(PublisherRow.name == name).values(kind=kind, target=target)
                )
                return
        try:
            with autocommit(self._engine) as conn:
                conn.execute(
                    insert(PublisherRow).values(
                        name=name,
                        kind=kind,
                        target=target,
                        cursor=0,
                        owner=None,
                        epoch=0,
                        lease_expires_ms=0,
                        delivered=0,
                        failures=0,
                    )
                )
        except IntegrityError:
            pass  # another replica registered it first

    def take(self, name: str, owner: str) -> PublisherLease | None:
        """The lease when it is free or expired; None while another replica holds it."""
        with autocommit(self._engine) as conn:
            params = {"name": name, "owner": owner, "lease": self._lease_ms}
            if conn.execute(self._take_over, params).rowcount != 1:
                return None
        with autocommit(self._engine) as conn:
            row = conn.execute(
                select(PublisherRow.owner, PublisherRow.epoch).where(PublisherRow.name == name)
            ).one()
        # The epoch read after the take: if another took it over in between, the owner shows it.
        return PublisherLease(name, owner, int(row.epoch)) if row.owner == owner else None

    def renew(self, lease: PublisherLease) -> bool:
        """Extend the lease; False when it ran out (another replica may hold it now)."""
        params = {"name": lease.name, "owner": lease.owner, "epoch": lease.epoch, "lease": self._lease_ms}
        with autocommit(self._engine) as conn:
            return bool(conn.execute(self._renew, params).rowcount == 1)


def _held(lease: PublisherLease) -> Any:
    return (
        (PublisherRow.name == lease.name)
        & (PublisherRow.owner == lease.owner)
        & (PublisherRow.epoch == lease.epoch)
    )


def advance(conn: Connection, lease: PublisherLease, cursor: int, delivered: int) -> bool:
    """Move the cursor to `cursor` (only forward) and count `delivered` (which clears the last error);
    False when the lease is lost."""
    values: dict[str, Any] = {"cursor": cursor, "delivered": PublisherRow.delivered + delivered}
    if delivered:
        values["last_error"] = None
    changed = conn.execute(
        update(PublisherRow).where(_held(lease), PublisherRow.cursor < cursor).values(**values)
    ).rowcount
    return bool(changed == 1)


def record_failure(conn: Connection, name: str, error: str) -> None:
    """Count a failed delivery attempt and keep its reason (by any replica: failures are facts)."""
    conn.execute(
        update(PublisherRow)
        .where(PublisherRow.name == name)
        .values(failures=PublisherRow.failures + 1, last_error=error[:ERROR_CHARS])
    )


def cursor_of(conn: Connection, name: str) -> int:
    value = conn.execute(select(PublisherRow.cursor).where(PublisherRow.name == name)).scalar()
    return int(value or 0)


def events_after(conn: Connection, after: int, limit: int) -> list[Row[Any]]:
    """The outbox after a publisher's cursor, in cursor order (the order a table's changes committed)."""
    return list(conn.execute(select(EventRow).where(EventRow.id > after).order_by(EventRow.id).limit(limit)))


def event(conn: Connection, event_id: int) -> Row[Any] | None:
    return conn.execute(select(EventRow).where(EventRow.id == event_id)).first()


@dataclass(frozen=True)
class Lag:
    events: int
    seconds: float | None
    """Age of the oldest event not yet delivered, by the recording replica's clock; None when none."""


def lag(conn: Connection, cursor: int, now: float) -> Lag:
    """How far behind the outbox a cursor is: events after it, and the age of the oldest of them."""
    count, oldest = conn.execute(
        select(func.count(EventRow.id), func.min(EventRow.created_at)).where(EventRow.id > cursor)
    ).one()
    return Lag(int(count), None if oldest is None else max(0.0, now - float(oldest)))


def publishers(conn: Connection) -> list[Row[Any]]:
    return list(conn.execute(select(PublisherRow).order_by(PublisherRow.name)))


def dead_letter_counts(conn: Connection) -> dict[str, int]:
    rows = conn.execute(
        select(DeadLetterRow.publisher, func.count(DeadLetterRow.id)).group_by(DeadLetterRow.publisher)
    )
    return {str(name): int(count) for name, count in rows}


def add_dead_letter(
    conn: Connection, lease: PublisherLease, event_id: int, attempts: int, error: str, now: float
) -> bool:
    """Give up on `event_id`: the dead letter and the cursor past it in one transaction (the caller's);
    False when the lease is lost (nothing written)."""
    if not advance(conn, lease, event_id, 0):
        return False
    conn.execute(
        insert(DeadLetterRow).values(
            publisher=lease.name,
            event_id=event_id,
            attempts=attempts,
            last_error=error[:ERROR_CHARS],
            failed_at=now,
        )
    )
    return True


def dead_letters(conn: Connection, publisher: str | None, limit: int) -> list[Row[Any]]:
    query = select(DeadLetterRow)
    if publisher is not None:
        query = query.where(DeadLetterRow.publisher == publisher)
    return list(conn.execute(query.order_by(DeadLetterRow.id).limit(limit)))


def dead_letter(conn: Connection, letter_id: int) -> Row[Any] | None:
    return conn.execute(select(DeadLetterRow).where(DeadLetterRow.id == letter_id)).first()


def drop_dead_letter(conn: Connection, letter_id: int) -> bool:
    return bool(conn.execute(delete(DeadLetterRow).where(DeadLetterRow.id == letter_id)).rowcount == 1)


def retried_dead_letter(conn: Connection, letter_id: int, error: str, now: float) -> None:
    conn.execute(
        update(DeadLetterRow)
        .where(DeadLetterRow.id == letter_id)
        .values(attempts=DeadLetterRow.attempts + 1, last_error=error[:ERROR_CHARS], failed_at=now)
    )
