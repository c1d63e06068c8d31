"""The outbox of commit events: written beside each change, in its transaction; read by cursor.

Cursor order is commit order. A consumer reads `id > after` and remembers the last id it saw, so an
event that became visible with an id below one already read would be skipped for ever. Ids come from a
sequence, which hands them out at insert time, not at commit: two transactions A (id 10) and B (id 11)
may commit B first, and a reader between the two commits would see 11 and never 10.

- SQLite: every write transaction begins IMMEDIATE (db/engine.py) and holds the database's one write
  lock until it commits, so the ids are handed out in commit order already.
- PostgreSQL: the insert first takes a transaction-scoped advisory lock (`_SERIAL_KEY`), one for the
  whole database, and only then draws its ids; the lock is released after the transaction's commit
  became visible. So B can draw 11 only once A, holding 10, has committed (or rolled back, leaving a
  gap, which readers never wait for). The lock is taken by the outbox insert itself, the last write of a
  commit point (or a data-modifying CTE of the one-statement commit point), so it serialises only the
  end of commit points, not their reads, and costs no extra round trip. The alternative, publishing only
  ids below the oldest transaction in flight (xmin), needs no lock on the writer's side but makes every
  reader reason about transaction ids that are assigned in another order than the sequence's values.

A rejected or failed change writes no event: its transaction rolls back with its event rows in it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from sqlalchemy import Connection, Row, delete, func, insert, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from coordinator.db.models import EventConsumerRow, EventRetentionRow, EventRow
from coordinator.db.scope import TableScope

_SERIAL_KEY = 0x5043_4345_5645_4E54 >> 1
"""The advisory lock that serialises drawing event ids on PostgreSQL ("PCCEVENT", halved into a bigint)."""

EVENT_COLUMNS = (
    "table_id",
    "database",
    "table_name",
    "table_uuid",
    "kind",
    "snapshot_ids",
    "commit_user",
    "commit_identifier",
    "partitions",
    "details",
    "created_at",
)

_RECORDSET = """(SELECT pg_advisory_xact_lock({key})) AS serial,
    jsonb_to_recordset(CAST(:{rows} AS jsonb)) AS e(
        table_id text, database text, table_name text, table_uuid text, kind text, snapshot_ids jsonb,
        commit_user text, commit_identifier bigint, partitions jsonb, details jsonb, created_at float8)"""

INSERT_EVENTS = f"""INSERT INTO events ({", ".join(EVENT_COLUMNS)})
    SELECT {", ".join(f"e.{c}" for c in EVENT_COLUMNS)}
    FROM {_RECORDSET.format(key=_SERIAL_KEY, rows="{rows}")}"""
"""PostgreSQL: event rows from a JSON array (`events_json`), their ids drawn under the advisory lock.
The lock's one-row subquery is joined to every row, so no row (and no id) exists before it is held.
`{rows}` names the parameter; the one-statement commit point appends its own WHERE."""

_INSERT_STATEMENT: Final = text(INSERT_EVENTS.format(rows="events"))
"""Made once: SQLAlchemy keys its compiled-statement cache on the statement object."""


@dataclass(frozen=True)
class NewEvent:
    """One change to one table, as its transaction writes it."""

    table_id: str
    database: str
    table_name: str
    table_uuid: str | None
    kind: str
    created_at: float
    snapshot_ids: list[int] = field(default_factory=list)
    commit_user: str | None = None
    commit_identifier: int | None = None
    partitions: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] | None = None


def events_json(events: Sequence[NewEvent]) -> str:
    """The JSON array INSERT_EVENTS reads; a None is left out (SQL NULL, not a JSON null)."""
    return json.dumps([{k: v for k, v in asdict(e).items() if v is not None} for e in events])


def insert_events(conn: Connection, events: Sequence[NewEvent]) -> None:
    """The events of the caller's transaction, in one statement (none when there are none)."""
    if not events:
        return
    if conn.dialect.name == "postgresql":
        conn.execute(_INSERT_STATEMENT, {"events": events_json(events)})
    else:
        conn.execute(insert(EventRow), [asdict(e) for e in events])


@dataclass(frozen=True)
class EventFilter:
    """What a consumer reads: the events after its cursor, of one table, database or kind."""

    table_id: str | None = None
    database: str | None = None
    kind: str | None = None
    scope: TableScope | None = None


def _filtered(query: Any, wanted: EventFilter) -> Any:
    if wanted.table_id is not None:
        query = query.where(EventRow.table_id == wanted.table_id)
    if wanted.database is not None:
        query = query.where(EventRow.database == wanted.database)
    if wanted.kind is not None:
        query = query.where(EventRow.kind == wanted.kind)
    if wanted.scope is not None:
        query = query.where(wanted.scope.tables(EventRow.database, EventRow.table_name))
    return query


def events_after(conn: Connection, after: int, wanted: EventFilter, limit: int) -> list[Row[Any]]:
    """Events with a cursor above `after`, in cursor order, at most `limit`."""
    query = _filtered(select(EventRow).where(EventRow.id > after), wanted)
    return list(conn.execute(query.order_by(EventRow.id).limit(limit)).all())


def newest_cursor(conn: Connection, wanted: EventFilter) -> int | None:
    """The newest cursor `wanted` matches; None when none does."""
    value = conn.execute(_filtered(select(func.max(EventRow.id)), wanted)).scalar()
    return None if value is None else int(value)


def pruned_through(conn: Connection) -> int:
    """The highest cursor retention deleted (0: none)."""
    value = conn.execute(select(EventRetentionRow.pruned_through).where(EventRetentionRow.id == 1)).scalar()
    return int(value or 0)


def oldest_cursor(conn: Connection) -> int | None:
    """The oldest cursor still kept; None when the outbox is empty."""
    value = conn.execute(select(func.min(EventRow.id))).scalar()
    return None if value is None else int(value)


def prune(conn: Connection, older_than: float) -> int:
    """Delete the events recorded before `older_than` (epoch seconds) and remember the highest cursor
    deleted; returns how many went."""
    through = conn.execute(select(func.max(EventRow.id)).where(EventRow.created_at < older_than)).scalar()
    if through is None:
        return 0
    deleted = conn.execute(delete(EventRow).where(EventRow.id <= through)).rowcount
    if conn.execute(select(EventRetentionRow.id).where(EventRetentionRow.id == 1)).first() is None:
        conn.execute(insert(EventRetentionRow).values(id=1, pruned_through=through))
    else:
        conn.execute(
            update(EventRetentionRow)
            .where(EventRetentionRow.id == 1, EventRetentionRow.pruned_through < through)
            .values(pruned_through=through)
        )
    return int(deleted)


@dataclass(frozen=True)
class ConsumerLag:
    """A named consumer: what it was last delivered, how many events it would be sent after that, and
    when the oldest of them was recorded (None: none waits)."""

    name: str
    delivered_through: int
    table_id: str | None
    database: str | None
    kind: str | None
    last_seen_at: float
    lag_events: int
    oldest_pending_at: float | None


def _consumer_upsert(dialect: Any) -> Any:
    statement = dialect.insert(EventConsumerRow)
    excluded = statement.excluded
    return statement.on_conflict_do_update(
        index_elements=[EventConsumerRow.name],
        set_={c: excluded[c] for c in ("delivered_through", "table_id", "database", "kind", "last_seen_at")},
    )


_CONSUMER_UPSERTS = {"postgresql": _consumer_upsert(postgresql), "sqlite": _consumer_upsert(sqlite)}


def record_consumer(conn: Connection, name: str, cursor: int, wanted: EventFilter, at: float) -> None:
    """Remember that `name` was delivered the events through `cursor`, read with `wanted`'s filter."""
    conn.execute(
        _CONSUMER_UPSERTS[conn.dialect.name],
        {
            "name": name,
            "delivered_through": cursor,
            "table_id": wanted.table_id,
            "database": wanted.database,
            "kind": wanted.kind,
            "last_seen_at": at,
        },
    )


def consumer_lags(conn: Connection) -> list[ConsumerLag]:
    """Every named consumer by name, with the events after its cursor that its filter matches."""
    lags = []
    for c in conn.execute(select(EventConsumerRow).order_by(EventConsumerRow.name)).all():
        wanted = EventFilter(c.table_id, c.database, c.kind)
        query = _filtered(
            select(func.count(), func.min(EventRow.created_at)).where(EventRow.id > c.delivered_through),
            wanted,
        )
        pending, oldest = conn.execute(query).one()
        pending_at = None if oldest is None else float(oldest)
        row = (c.name, c.delivered_through, c.table_id, c.database, c.kind, c.last_seen_at)
        lags.append(ConsumerLag(*row, int(pending), pending_at))
    return lags
