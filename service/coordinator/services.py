"""The use cases wired to one engine, one warehouse and one lock backend; built in the app's lifespan."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import Engine

from coordinator.db.engine import bookkeeping_engine, make_engine
from coordinator.db.migrate import upgrade
from coordinator.locks.lock_table import LockTable
from coordinator.settings import Settings
from coordinator.storage.fileio import open_warehouse
from coordinator.usecases.commits import Committer
from coordinator.usecases.maintenance import Maintenance
from coordinator.usecases.reads import Reads
from coordinator.usecases.tables import Tables

log = logging.getLogger(__name__)


@dataclass
class Services:
    settings: Settings
    engine: Engine
    bookkeeping: Engine
    tables: Tables
    committer: Committer
    reads: Reads
    maintenance: Maintenance
    locks: LockTable
    warehouse_root: str

    @classmethod
    def start(cls, settings: Settings) -> Services:
        """Migrate (if asked), open the database and the warehouse."""
        if settings.auto_migrate:
            upgrade(settings.database_url)
        engine = make_engine(settings.database_url)
        bookkeeping = bookkeeping_engine(engine)
        fileio, root = open_warehouse(settings.warehouse)
        locks = LockTable(bookkeeping, settings.lock_lease_seconds)
        tables = Tables(engine, fileio, root)
        committer = Committer(
            engine,
            bookkeeping,
            fileio,
            tables,
            locks,
            lease_seconds=settings.lock_lease_seconds,
            acquire_timeout_seconds=settings.lock_acquire_timeout_seconds,
        )
        for table_id in committer.recover():
            log.warning("published snapshots of %s that a crash left unpublished", table_id)
        reads = Reads(engine, fileio, tables, locks)
        maintenance = Maintenance(
            engine,
            fileio,
            tables,
            locks,
            committer,
            reads,
            lease_seconds=settings.lock_lease_seconds,
            acquire_timeout_seconds=settings.lock_acquire_timeout_seconds,
        )
        return cls(settings, engine, bookkeeping, tables, committer, reads, maintenance, locks, root)

    def close(self) -> None:
        self.maintenance.close()
        self.engine.dispose()
        self.bookkeeping.dispose()
