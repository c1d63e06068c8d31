"""The catch-up: under the table's lock, before anything is decided, the table as it really is.

What a crash left committed but unpublished is published; a published head that a writer outside the
coordinator overwrote on storage is taken back (its outsider's snapshot is recorded under that id, our
commit marked `overwritten` and its changes returned to be applied again on top, see reapplication);
snapshots an outside writer added are adopted; then the in-memory state and the live-file index are
brought up to the head. The same check runs periodically (overwrite_watch) for tables nobody commits to.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from sqlalchemy import Connection, Engine

from coordinator.commit.live_index import LiveIndex
from coordinator.commit.member import Member
from coordinator.commit.outbox import outside_event
from coordinator.commit.publish import Publication, SnapshotTaken
from coordinator.commit.reapplication import reapplication
from coordinator.commit.table_state import SnapshotLoader, TableState, TableStates
from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.db.repositories import live_files as index
from coordinator.db.repositories.events import insert_events
from coordinator.domain.committable import ResolvedCommittable
from coordinator.errors import TableNotFound
from coordinator.observability.metrics import Metrics
from coordinator.storage.fileio import FileIO
from coordinator.usecases.snapshot_file import SnapshotFile
from coordinator.usecases.table_stats import delta_on_storage
from coordinator.usecases.tables import Table, Tables, version_of
from paimon_format.snapshot import Snapshot

log = logging.getLogger(__name__)


class CatchUp:
    def __init__(
        self,
        engine: Engine,
        fileio: FileIO,
        tables: Tables,
        states: TableStates,
        live_index: LiveIndex,
        publication: Publication,
        metrics: Metrics,
    ) -> None:
        self._engine = engine
        self._fileio = fileio
        self._tables = tables
        self._states = states
        self._live_index = live_index
        self._publication = publication
        self._metrics = metrics

    def context(self, table: Table, members: Sequence[Member]) -> tuple[Table, repo.GroupContext]:
        """Under the lock: the members' context (the head and their records, one round trip) and the table
        as its row is now.

        The row is the truth, not this process's cache: another replica may have dropped the table and
        created it again (another uuid) or changed its schema (the next schema id). Then the cached table
        and the in-memory state built for it are dropped, and the members are decided against the table
        the row describes.

        Raises:
            TableNotFound: the table was dropped meanwhile.
        """
        try:
            with read_only(self._engine) as conn:
                context = group_context(conn, table, members)
            if context.version != version_of(table):
                self._states.invalidate(table.id)
                table = self._tables.at_version(table.id, context.version)
        except TableNotFound:
            self._tables.evict(table.id)
            self._states.invalidate(table.id)
            raise
        return table, context

    def catch_up(
        self, table: Table, context: repo.GroupContext
    ) -> tuple[TableState, list[ResolvedCommittable]]:
        """Under the lock: publish what a crash left unpublished, take back an overwritten head, adopt
        outside snapshots, and bring the in-memory state and the live-file index up to the table's head.

        `context` is what the group read of the table under the lock; its head and index position spare
        the commit path a read of each.

        Returns the state and the committables to apply again (those of an overwritten head)."""
        latest = context.latest_snapshot_id
        unpublished: list[repo.StoredSnapshot] = []
        if context.has_unpublished:
            with read_only(self._engine) as conn:
                unpublished = repo.unpublished_snapshots(conn, table.id)
        files = [SnapshotFile(s.snapshot_id, s.body) for s in unpublished]
        if files:
            try:
                self._publication.publish(table, files)
            except SnapshotTaken as taken:
                # Recorded but never published nor acknowledged (a crash, or a store that failed): a
                # resend of those commits finds no record of them and commits them again.
                self._publication.forget_taken(table, taken.snapshot_id)
                latest = taken.snapshot_id - 1
                files = [f for f in files if f.id < taken.snapshot_id]
        # With nothing published just now, the head is the one the context read, and so is its text.
        recorded = context.head_body if not files else self._published_body(table, latest)
        overwritten = self._overwritten(table, latest, recorded)
        lost = self._take_back(table, latest, overwritten) if overwritten is not None else []
        latest = self._adopt_outside_snapshots(table, latest)
        known = {f.id: f.body for f in files}
        if overwritten is None and context.head_body is not None:
            # A head another replica committed is built on from its recorded text, not read from storage.
            known[context.latest_snapshot_id] = context.head_body
        loader = SnapshotLoader(self._fileio, table, known)
        state = self._states.at(table, latest, loader)
        # The index position read with the context holds while the head is still the one read with it.
        unmoved = not files and overwritten is None and latest == context.latest_snapshot_id
        indexed_at = context.indexed_at if unmoved else None
        self._live_index.catch_up(table, latest, loader, state.manifests, indexed_at=indexed_at)
        return state, lost

    def head_overwritten(self, table: Table, latest: int) -> bool:
        """Whether snapshot `latest` on storage is not the one recorded (read-only: the periodic check)."""
        return self._overwritten(table, latest, self._published_body(table, latest)) is not None

    def _take_back(
        self, table: Table, latest: int, found: tuple[Snapshot, SnapshotFile]
    ) -> list[ResolvedCommittable]:
        """Under the lock: when an outside writer overwrote published snapshot `latest`, record its
        snapshot under that id instead (table size moved by both deltas, index rebuilt by the next commit).
        When the lost one was a commit of ours, mark it `overwritten` and return its changes to apply
        again on top; one we had adopted from another outside writer is theirs to redo ([])."""
        ours, theirs = found
        assert theirs.snapshot is not None  # read from its text
        our_delta = delta_on_storage(self._fileio, table, ours)
        their_delta = delta_on_storage(self._fileio, table, theirs.snapshot)
        with self._engine.begin() as conn:
            moved = repo.advance_latest_with_stats(
                conn,
                table.id,
                latest,
                latest,
                total_record_count=theirs.snapshot.total_record_count,
                files=their_delta.files - our_delta.files,
                size=their_delta.bytes - our_delta.bytes,
                at=time.time(),
            )
            if not moved:
                raise RuntimeError(f"the head of {table.id} moved while its lock was held")
            repo.delete_snapshots(conn, table.id, above=latest - 1)
            repo.insert_snapshots(conn, table.id, [theirs.row(published=True)])
            insert_events(conn, [outside_event(table, theirs.snapshot, time.time(), replacing=True)])
            index.reset_index(conn, table.id)
            acknowledged = repo.mark_overwritten(
                conn, table.id, [(ours.commit_user, ours.commit_identifier, ours.id)]
            )
        self._states.invalidate(table.id)
        if not acknowledged:
            log.warning(
                "adopted snapshot %d of %s was replaced on storage by another outside writer",
                latest,
                table.id,
            )
            return []
        self._metrics.snapshots_overwritten.inc()
        log.error(
            "snapshot %d of %s, committed by %s/%d and acknowledged, was overwritten on storage by a writer "
            "outside the coordinator; its changes are applied again on top",
            latest,
            table.id,
            ours.commit_user,
            ours.commit_identifier,
        )
        return [reapplication(self._fileio, table, ours)]

    def _published_body(self, table: Table, snapshot_id: int) -> str | None:
        """The text recorded for the snapshot if it is published."""
        with read_only(self._engine) as conn:
            row = repo.get_snapshot(conn, table.id, snapshot_id)
        return row.body if row is not None and row.published else None

    def _overwritten(
        self, table: Table, latest: int, recorded: str | None
    ) -> tuple[Snapshot, SnapshotFile] | None:
        """(ours as recorded, theirs as on storage) when published snapshot `latest`, whose recorded text
        is `recorded` (None: not published), differs on storage."""
        if latest == 0 or recorded is None:
            return None
        try:
            stored = self._fileio.read(table.layout.snapshot(latest)).decode()
        except FileNotFoundError:
            return None  # expired or rolled back by someone else: not an overwrite
        if stored == recorded:
            return None
        return Snapshot.from_json(recorded), SnapshotFile.read(stored)

    def _adopt_outside_snapshots(self, table: Table, latest: int) -> int:
        while self._fileio.exists(table.layout.snapshot(latest + 1)):
            adopted = SnapshotFile.read(self._fileio.read(table.layout.snapshot(latest + 1)).decode())
            snapshot = adopted.snapshot
            assert snapshot is not None  # read from its text
            delta = delta_on_storage(self._fileio, table, snapshot)  # bounded by the delta
            with self._engine.begin() as conn:
                if not repo.advance_latest_with_stats(
                    conn,
                    table.id,
                    latest,
                    adopted.id,
                    total_record_count=snapshot.total_record_count,
                    files=delta.files,
                    size=delta.bytes,
                    at=snapshot.time_millis / 1000,
                ):
                    break
                repo.insert_snapshots(conn, table.id, [adopted.row(published=True)])
                insert_events(conn, [outside_event(table, snapshot, time.time())])
            log.info("adopted snapshot %d of %s written outside the coordinator", adopted.id, table.id)
            latest = adopted.id
        return latest


def group_context(conn: Connection, table: Table, members: Sequence[Member]) -> repo.GroupContext:
    """The table's head and the recorded answers of the members, in one round trip.

    Raises:
        TableNotFound: the table was dropped meanwhile.
    """
    keys = [m.idempotency_key for m in members if m.idempotency_key is not None]
    context = repo.group_context(conn, table.id, [m.record_key for m in members], keys)
    if context is None:
        raise TableNotFound(f"table {table.id} does not exist")
    return context
