"""The use cases wired to one engine, one warehouse and one lock backend; built in the app's lifespan."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from sqlalchemy import Engine

from coordinator.access.audit import AuditLog
from coordinator.access.tokens import TokenStore
from coordinator.clock import Clock
from coordinator.commit.admission import Admission
from coordinator.commit.batch import Batches
from coordinator.commit.catch_up import CatchUp
from coordinator.commit.collaborators import Collaborators
from coordinator.commit.decide import Decider
from coordinator.commit.file_checks import FileChecks
from coordinator.commit.in_flight import InFlight
from coordinator.commit.intake import Intakes
from coordinator.commit.live_index import LiveIndex
from coordinator.commit.overwrite_watch import OverwriteWatch
from coordinator.commit.pipeline import Committer
from coordinator.commit.publish import Publication
from coordinator.commit.queue import CommitQueues
from coordinator.commit.table_state import TableStates
from coordinator.db.engine import bookkeeping_engine, count_round_trips, make_engine, probe_engine
from coordinator.db.migrate import upgrade
from coordinator.locks.base import LockBackend
from coordinator.locks.lock_table import LockTable
from coordinator.observability.metrics import Metrics
from coordinator.settings import Settings
from coordinator.storage.fileio import FileIO
from coordinator.storage.vended_credentials import DataTokens
from coordinator.storage.warehouse import open_warehouse
from coordinator.usecases.databases import Databases
from coordinator.usecases.event_feed import EventFeed
from coordinator.usecases.maintenance import Maintenance
from coordinator.usecases.operations import Operations
from coordinator.usecases.overview import Overview
from coordinator.usecases.publishing.publishers import Publishers
from coordinator.usecases.reads import Reads
from coordinator.usecases.snapshot_documents import SnapshotDocuments
from coordinator.usecases.table_hold import TableHolds
from coordinator.usecases.table_stats import Backfill
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
    operations: Operations
    overview: Overview
    locks: LockBackend
    tokens: TokenStore
    metrics: Metrics
    warehouse_root: str
    fileio: FileIO
    clock: Clock
    backfill: Backfill
    overwrite_watch: OverwriteWatch
    databases: Databases
    snapshot_documents: SnapshotDocuments
    data_tokens: DataTokens
    holds: TableHolds
    file_checks: FileChecks
    probes: Engine
    queues: CommitQueues
    in_flight: InFlight
    admission: Admission
    events: EventFeed
    publishers: Publishers

    @classmethod
    def start(cls, settings: Settings) -> Services:
        """Migrate (if asked), open the database, the warehouse and the lock backend, and build every use
        case on them: the one place the service is wired."""
        if settings.auto_migrate:
            upgrade(settings.database_url)
        engine = make_engine(settings.database_url, settings.database_statement_timeout_seconds)
        bookkeeping = bookkeeping_engine(engine)
        fileio, root = open_warehouse(settings.warehouse)
        metrics = Metrics()
        clock = Clock()
        locks, lease_seconds = lock_backend(settings, bookkeeping)
        holds = TableHolds(
            engine,
            locks,
            lease_seconds=lease_seconds,
            acquire_timeout_seconds=settings.lock_acquire_timeout_seconds,
            metrics=metrics,
            clock=clock,
        )
        tables = Tables(engine, fileio, root, clock)
        # The commit pipeline's steps (commit/pipeline.py), each built once and handed what it uses.
        probes = probe_engine(engine)
        for name, counted in (("durable", engine), ("bookkeeping", bookkeeping), ("probes", probes)):
            if name == "durable" or counted is not engine:  # on SQLite the three are one engine
                count_round_trips(counted, metrics.db_round_trips.labels(name).inc)
        states = TableStates(fileio)
        live_index = LiveIndex(engine, probes)
        queues = CommitQueues()
        in_flight = InFlight()
        # Backpressure at every commit door: a 429 when the commits waiting here would outlast the limit.
        limit = settings.commit_queue_max_wait_seconds
        admission = Admission(queues, metrics, clock, limit_seconds=lease_seconds if limit is None else limit)
        file_checks = FileChecks(fileio, tables)
        publication = Publication(engine, bookkeeping, fileio, tables, holds, states, metrics)
        committer = Committer(
            Collaborators(
                engine=engine,
                bookkeeping=bookkeeping,
                fileio=fileio,
                tables=tables,
                holds=holds,
                intakes=Intakes(engine, tables, file_checks, clock),
                queues=queues,
                batches=Batches(settings.commit_batch_tables, settings.commit_batches_at_once),
                in_flight=in_flight,
                catch_up=CatchUp(engine, fileio, tables, states, live_index, publication, metrics),
                decider=Decider(engine, live_index, clock),
                publication=publication,
                states=states,
                metrics=metrics,
                clock=clock,
            ),
            max_transaction_tables=settings.transaction_max_tables,
        )
        for table_id in committer.recover():
            log.warning("published snapshots of %s that a crash left unpublished", table_id)
        reads = Reads(engine, fileio, tables, holds.ends)
        maintenance = Maintenance(
            fileio, tables, reads, holds, states, queues, in_flight, metrics=metrics, clock=clock
        )
        # Retention runs after a commit stands (snapshot.expire.execution-mode: sync, or async). Its
        # failures, in either mode, are logged and counted (coordinator_post_commit_failures_total
        # {step="retention"}) and never reach the committer: its commit stands and its answer is 201.
        committer.after_each_commit(maintenance.after_commit)
        operations = Operations(engine, locks, holds.ends, in_flight, AuditLog(engine, clock), metrics)
        # Sizes of tables recorded before revision 0005, read once from storage in the background.
        backfill = Backfill(engine, fileio, tables)
        backfill.start()
        overwrite_watch = OverwriteWatch(engine, committer, settings.overwrite_check_seconds)
        overwrite_watch.start()
        events = EventFeed(engine, clock, retention_seconds=settings.events_retention_seconds)
        events.start()
        # Pushes the outbox to NATS JetStream and webhooks, when configured; never in a commit's way.
        publishers = Publishers(engine, settings, metrics, clock)
        publishers.start()
        return cls(
            settings,
            engine,
            bookkeeping,
            tables,
            committer,
            reads,
            maintenance,
            operations,
            Overview(engine, tables, clock, admission),
            locks,
            TokenStore(engine, clock),
            metrics,
            root,
            fileio,
            clock,
            backfill,
            overwrite_watch,
            Databases(engine, tables, root, clock),
            SnapshotDocuments(engine, fileio, tables),
            DataTokens(settings, os.environ, clock),
            holds,
            file_checks,
            probes,
            queues,
            in_flight,
            admission,
            events,
            publishers,
        )

    def close(self) -> None:
        self.holds.close()  # the finishes still running, before anything they use is closed
        self.publishers.close()
        self.events.close()
        self.overwrite_watch.close()
        self.backfill.close()
        self.maintenance.close()
        self.file_checks.close()
        if self.probes is not self.engine:
            self.probes.dispose()
        self.locks.close()
        self.data_tokens.close()
        self.engine.dispose()
        self.bookkeeping.dispose()


def lock_backend(settings: Settings, bookkeeping: Engine) -> tuple[LockBackend, float]:
    """The configured lock backend and the lease its holders renew against."""
    if settings.lock_backend == "hive":
        from coordinator.locks.hive_metastore import HiveMetastoreLocks

        assert settings.hive_metastore_uri is not None  # Settings checks it
        lease = settings.hive_lock_timeout_seconds
        return HiveMetastoreLocks(settings.hive_metastore_uri, lease_seconds=lease), lease
    locks = LockTable(bookkeeping, settings.lock_lease_seconds, holder_url=settings.advertise_url)
    return locks, settings.lock_lease_seconds
