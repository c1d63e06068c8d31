"""SQLAlchemy 2 models of every table the service owns; Alembic migrations mirror them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from paimon_format.snapshot import BATCH_IDENTIFIER

JSON_DOCUMENT = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
"""A JSON document (JSONB on PostgreSQL); Python None is SQL NULL, not a JSON null."""


class Base(DeclarativeBase):
    pass


class TableRow(Base):
    """A Paimon table the coordinator commits to; `latest_snapshot_id` is the commit point's pointer.

    The size columns describe the latest snapshot and move with the pointer in the same transaction
    (domain.table_stats); NULL means not known yet (a row older than revision 0005, until the start-up
    backfill reaches it).
    """

    __tablename__ = "paimon_tables"

    id: Mapped[str] = mapped_column(String(256), primary_key=True)
    database: Mapped[str] = mapped_column(String(128))
    name: Mapped[str] = mapped_column(String(128))
    uuid: Mapped[str] = mapped_column(String(36))
    location: Mapped[str] = mapped_column(Text)
    location_key: Mapped[str | None] = mapped_column(Text, nullable=True)
    """domain.locations.location_key of `location`: unique, so two tables never own one folder. NULL only
    for a row that revision 0007 found sharing its folder with an older row (which keeps the key)."""
    origin: Mapped[str] = mapped_column(String(16), server_default="registered")
    """`created`: the coordinator made the folder (purge may delete it); `registered`: it was found."""
    schema_id: Mapped[int] = mapped_column(BigInteger)
    schema_json: Mapped[str] = mapped_column(Text)
    latest_snapshot_id: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[float] = mapped_column(Float)
    total_record_count: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    """The latest snapshot's totalRecordCount."""
    file_count: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    """Live data files at the latest snapshot."""
    file_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    """Their total size."""
    last_commit_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    """When the latest commit that moved the head was recorded (epoch seconds); None before the first."""

    __table_args__ = (
        # The table list pages by (database, name) and filters on them: keyset pagination on this index.
        Index("ux_paimon_tables_database_name", "database", "name", unique=True),
        # One folder, one table: a second registration of a location loses here even in a race.
        Index("ux_paimon_tables_location_key", "location_key", unique=True),
    )


class DatabaseRow(Base):
    """A database of the catalog: Paimon's REST catalog creates, lists and drops them; a table's
    `database` names one (the native API's table creation makes it exist)."""

    __tablename__ = "paimon_databases"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    options: Mapped[dict[str, str]] = mapped_column(JSON_DOCUMENT)
    created_at: Mapped[float] = mapped_column(Float)


class SnapshotRow(Base):
    """Every snapshot of a table; `published` turns true once snapshot-N is on storage."""

    __tablename__ = "snapshots"

    table_id: Mapped[str] = mapped_column(
        String(256), ForeignKey("paimon_tables.id", ondelete="CASCADE"), primary_key=True
    )
    snapshot_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    commit_user: Mapped[str] = mapped_column(String(200))
    commit_identifier: Mapped[int] = mapped_column(BigInteger)
    commit_kind: Mapped[str] = mapped_column(String(16))
    time_millis: Mapped[int] = mapped_column(BigInteger)
    body: Mapped[str] = mapped_column(Text)
    published: Mapped[bool] = mapped_column(Boolean)

    __table_args__ = (
        Index(
            "ix_snapshots_unpublished",
            "table_id",
            postgresql_where=text("NOT published"),
            sqlite_where=text("NOT published"),
        ),
    )


class LiveFileRow(Base):
    """One data file of a table's latest snapshot: the live-file index conflict checks read per bucket.

    Keyed by Paimon's file identity within the table; `entry` is the whole manifest entry (Avro, the
    manifest's own record schema) so a DELETE can repeat it. A removed file keeps its row for a while
    with `removed_in` set, so a late conflict can name the snapshot that removed it.
    """

    __tablename__ = "live_files"

    # No foreign key to paimon_tables (migration 0010): the database would check it once per row, and
    # the snapshot row every commit point inserts beside these rows already checks the table exists.
    table_id: Mapped[str] = mapped_column(String(256), primary_key=True)
    partition: Mapped[bytes] = mapped_column(LargeBinary, primary_key=True)
    bucket: Mapped[int] = mapped_column(Integer, primary_key=True)
    level: Mapped[int] = mapped_column(Integer, primary_key=True)
    file_name: Mapped[str] = mapped_column(String(1024), primary_key=True)
    total_buckets: Mapped[int] = mapped_column(Integer)
    max_sequence_number: Mapped[int] = mapped_column(BigInteger)
    added_in: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    """The snapshot that added the file; unknown for files indexed from an existing table."""
    removed_in: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    entry: Mapped[bytes] = mapped_column(LargeBinary)

    __table_args__ = (
        Index("ix_live_files_name", "table_id", "file_name"),
        Index(
            "ix_live_files_removed",
            "table_id",
            "removed_in",
            postgresql_where=text("removed_in IS NOT NULL"),
            sqlite_where=text("removed_in IS NOT NULL"),
        ),
    )


class LiveIndexRow(Base):
    """The snapshot a table's live-file index reflects; no row means it is not built yet."""

    __tablename__ = "live_index"

    table_id: Mapped[str] = mapped_column(
        String(256), ForeignKey("paimon_tables.id", ondelete="CASCADE"), primary_key=True
    )
    snapshot_id: Mapped[int] = mapped_column(BigInteger)


class CommitRow(Base):
    """One commit attempt and its outcome: the history, the dedup record and the idempotency record."""

    __tablename__ = "commits"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    table_id: Mapped[str] = mapped_column(String(256), ForeignKey("paimon_tables.id", ondelete="CASCADE"))
    commit_user: Mapped[str] = mapped_column(String(200))
    identifier: Mapped[int] = mapped_column(BigInteger)
    outcome: Mapped[str] = mapped_column(String(16))
    snapshots: Mapped[list[dict[str, Any]]] = mapped_column(JSON_DOCUMENT)
    """[{"id": snapshot id, "commitKind": ...}] of a committed commit."""
    timings: Mapped[dict[str, float]] = mapped_column(JSON_DOCUMENT)
    """Milliseconds per commit phase."""
    conflict: Mapped[dict[str, Any] | None] = mapped_column(JSON_DOCUMENT, nullable=True)
    """A rejected commit's conflict, as on the wire (ConflictModel)."""
    idempotency_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[float] = mapped_column(Float, index=True)
    action: Mapped[str] = mapped_column(String(32), server_default="commit")
    """'commit', or the maintenance action the row records (outcome 'done'): expire, rollback, ..."""
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON_DOCUMENT, nullable=True)
    """A maintenance action's record: what it changed and deleted."""
    digest: Mapped[str | None] = mapped_column(String(64), nullable=True)
    """The digest of the changes of the request that made the row (domain.commit_digest): a resend is
    answered from the row only when it asks for the same changes. None on rows from before 0011."""

    __table_args__ = (
        # A (commitUser, identifier) is committed at most once per table: the database refuses a second.
        # The batch identifier names no commit: a commit user's batch commits differ by their changes.
        Index(
            "ux_commits_committed",
            "table_id",
            "commit_user",
            "identifier",
            unique=True,
            postgresql_where=text(f"outcome = 'committed' AND identifier <> {BATCH_IDENTIFIER}"),
            sqlite_where=text(f"outcome = 'committed' AND identifier <> {BATCH_IDENTIFIER}"),
        ),
        Index(
            "ux_commits_batch_committed",
            "table_id",
            "commit_user",
            "digest",
            unique=True,
            postgresql_where=text(f"outcome = 'committed' AND identifier = {BATCH_IDENTIFIER}"),
            sqlite_where=text(f"outcome = 'committed' AND identifier = {BATCH_IDENTIFIER}"),
        ),
        Index(
            "ux_commits_idempotency_key",
            "table_id",
            "idempotency_key",
            unique=True,
            postgresql_where=text("idempotency_key IS NOT NULL"),
            sqlite_where=text("idempotency_key IS NOT NULL"),
        ),
        # The history page, newest first: read from the end of the table's run, never sorted.
        Index("ix_commits_table_history", "table_id", "id"),
        # The attempts that did not commit, of one (commitUser, identifier): a commit's outcome without a
        # committed row is a probe. A commit that succeeds writes nothing to it.
        Index(
            "ix_commits_attempts",
            "table_id",
            "commit_user",
            "identifier",
            "id",
            postgresql_where=text("outcome <> 'committed'"),
            sqlite_where=text("outcome <> 'committed'"),
        ),
    )


class LockRow(Base):
    """A lock with a lease on the database clock and an epoch that fences a holder whose lease ran out.

    Rows are never deleted: releasing clears the owner, so the epoch only ever grows.
    """

    __tablename__ = "locks"

    lock_id: Mapped[str] = mapped_column(String(300), primary_key=True)
    owner: Mapped[str | None] = mapped_column(String(200), nullable=True)
    epoch: Mapped[int] = mapped_column(BigInteger)
    acquired_at_ms: Mapped[int] = mapped_column(BigInteger)
    expires_at_ms: Mapped[int] = mapped_column(BigInteger)
    holder_url: Mapped[str | None] = mapped_column(String(300), nullable=True)
    """Where the holder answers (its advertise_url): other replicas forward commits there."""


class TokenRow(Base):
    """A bearer token: only the SHA-256 of its secret is kept, so a leaked database leaks no token."""

    __tablename__ = "api_tokens"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))
    database: Mapped[str | None] = mapped_column(String(128), nullable=True)
    table_name: Mapped[str | None] = mapped_column(String(128), nullable=True)
    secret_sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[float] = mapped_column(Float)
    revoked_at: Mapped[float | None] = mapped_column(Float, nullable=True)


class AuditRow(Base):
    """An administrative action that is not a table's history: forced lock releases, token changes."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[float] = mapped_column(Float)
    actor: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(300))
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON_DOCUMENT, nullable=True)


class EventRow(Base):
    """The outbox: one row per change to a table, written in the transaction (or statement) that makes the
    change, so an event exists if and only if its change does (db/repositories/events.py).

    `id` is the feed's cursor. It only grows (AUTOINCREMENT on SQLite: never reused after retention
    deletes the newest row) and is assigned in commit order (see events.py for PostgreSQL). No foreign
    key to paimon_tables: a dropped table's events, its drop among them, outlive its row.
    """

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    table_id: Mapped[str] = mapped_column(String(257))
    database: Mapped[str] = mapped_column(String(128))
    table_name: Mapped[str] = mapped_column(String(128))
    table_uuid: Mapped[str | None] = mapped_column(String(36), nullable=True)
    kind: Mapped[str] = mapped_column(String(32))
    snapshot_ids: Mapped[list[int]] = mapped_column(JSON_DOCUMENT)
    commit_user: Mapped[str | None] = mapped_column(String(200), nullable=True)
    commit_identifier: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    partitions: Mapped[list[dict[str, Any]]] = mapped_column(JSON_DOCUMENT)
    """[{"partition": {...}, "addedFiles", "removedFiles", "addedRows", "removedRows"}] of a commit."""
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON_DOCUMENT, nullable=True)
    created_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (
        # A feed filtered by table reads (table_id, id > after) on this index; retention by age on the next.
        Index("ix_events_table", "table_id", "id"),
        Index("ix_events_created_at", "created_at"),
        {"sqlite_autoincrement": True},
    )


class EventRetentionRow(Base):
    """One row: the highest cursor retention has deleted through. A consumer resuming after a smaller
    cursor may have missed events and gets 410; one at or after it has missed nothing."""

    __tablename__ = "event_retention"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    pruned_through: Mapped[int] = mapped_column(BigInteger)


class EventConsumerRow(Base):
    """A named consumer of the feed (GET /events?consumer=name): the last cursor delivered to it, the
    filter it reads with (its lag counts only the events it would be sent) and when it last read."""

    __tablename__ = "event_consumers"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    delivered_through: Mapped[int] = mapped_column(BigInteger)
    table_id: Mapped[str | None] = mapped_column(String(257), nullable=True)
    database: Mapped[str | None] = mapped_column(String(128), nullable=True)
    kind: Mapped[str | None] = mapped_column(String(32), nullable=True)
    last_seen_at: Mapped[float] = mapped_column(Float)


class PublisherRow(Base):
    """A publisher of the event feed (NATS JetStream, a webhook): how far it has delivered, and the
    lease that lets one replica publish at a time (usecases/publishing/relay.py).

    `cursor` only moves forward, and only by the lease's current holder (owner and epoch match), so a
    replica that lost the lease cannot move it back or past what the new holder sent.
    """

    __tablename__ = "event_publishers"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    target: Mapped[str] = mapped_column(String(500))
    cursor: Mapped[int] = mapped_column(BigInteger)
    owner: Mapped[str | None] = mapped_column(String(200), nullable=True)
    epoch: Mapped[int] = mapped_column(BigInteger)
    lease_expires_ms: Mapped[int] = mapped_column(BigInteger)
    delivered: Mapped[int] = mapped_column(BigInteger)
    failures: Mapped[int] = mapped_column(BigInteger)
    last_error: Mapped[str | None] = mapped_column(String(500), nullable=True)


class DeadLetterRow(Base):
    """An event a webhook gave up on after its attempts; redelivered or dropped through the ops API."""

    __tablename__ = "event_dead_letters"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    publisher: Mapped[str] = mapped_column(String(128))
    event_id: Mapped[int] = mapped_column(BigInteger)
    attempts: Mapped[int] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    failed_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (
        UniqueConstraint("publisher", "event_id", name="uq_event_dead_letters_publisher_event"),
    )
