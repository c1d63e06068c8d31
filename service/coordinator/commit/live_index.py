"""Each table's live-file index: the slice a commit's conflict checks need, and keeping it current.

The index lives in the database (`db.repositories.live_files`), one row per live data file, advanced
in the commit point's transaction by each snapshot's delta. A commit loads only the rows its entries
name, the buckets where it adds leveled files, one file per partition it adds to (for the bucket
count) and, for an overwrite, the partitions it replaces; the group's snapshots that are built but not
yet recorded lie on top as an overlay. So the cost of a commit follows the commit, not the table, and
a restarted service or a replica reads no manifest to start committing.

A table the index has not seen (created before the index existed), or has lost track of (a rollback),
is indexed once from its latest snapshot's manifests; snapshots adopted from outside writers are
applied from their delta manifests.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from sqlalchemy import Connection, Engine

from coordinator.db.engine import read_only
from coordinator.db.repositories import live_files as index
from coordinator.domain.committable import OverwriteTarget, ResolvedCommittable
from coordinator.domain.live_files import LiveFiles
from coordinator.usecases.manifests import ManifestStore
from coordinator.usecases.tables import Table
from paimon_format.manifest import FileKind, ManifestEntry
from paimon_format.snapshot import Snapshot

log = logging.getLogger(__name__)

Delta = tuple[int, Sequence[ManifestEntry]]
"""A snapshot id and the entries of its delta."""

REMEMBER_REMOVED = 1000
"""Snapshots for which a removed file's row stays, so a conflict can name the snapshot that removed it."""

FORGET_EVERY = 64
"""Removed rows past REMEMBER_REMOVED are deleted at every this-many-th snapshot, not at each: a 1-file
commit saves a statement, and a row is remembered at most this many snapshots longer."""

MAX_DELTA_REPLAY = 64
"""Past this many snapshots behind, the index is rebuilt from the latest snapshot instead."""


class LiveIndex:
    def __init__(self, engine: Engine, probes: Engine) -> None:
        """`probes`: db.engine.probe_engine(engine), for the reads at the start of a commit."""
        self._engine = engine
        self._probes = probes
        self._group_rows: dict[str, dict[index.FileKey, list[index.IndexedFile]]] = {}
        """While a group of a table is decided (`group`): the index rows its members' files name."""

    @contextmanager
    def group(self, table: Table, resolved: Sequence[ResolvedCommittable]) -> Iterator[None]:
        """While a group's members are decided, one after another under the table's lock: the index rows
        their files name, read in one probe for all of them instead of one round trip per member. The
        recorded index does not move before the group's commit point, so the rows stay what each
        member's own probe would read; what the members before it built lies in its overlay, as ever."""
        keys = {index.file_key(e) for r in resolved for e in (*r.append, *r.compact)}
        if len(resolved) < 2 or not keys:
            yield
            return
        with read_only(self._probes) as conn:
            found = index.find_files(conn, table.id, keys)
        rows: dict[index.FileKey, list[index.IndexedFile]] = {key: [] for key in keys}
        for row in found:
            rows[index.file_key(row.entry)].append(row)
        self._group_rows[table.id] = rows
        try:
            yield
        finally:
            del self._group_rows[table.id]

    def view(
        self, table: Table, resolved: ResolvedCommittable, overlay: Sequence[Delta], snapshot_id: int
    ) -> LiveFiles:
        """The live files `resolved` can touch, as of `snapshot_id`: the recorded index plus `overlay`."""
        entries = [*resolved.append, *resolved.compact]
        adds = [e for e in entries if e.kind == FileKind.ADD]
        leveled = {(e.partition, e.bucket) for e in adds if e.file.level > 0 and table.shape.has_primary_key}
        counted = {e.partition for e in adds if e.total_buckets > 0}
        keys = {index.file_key(e) for e in entries}
        grouped = self._group_rows.get(table.id)
        found = None
        if grouped is not None and keys <= grouped.keys():
            found = [row for key in keys for row in grouped[key]]
        if found is None or leveled or counted or resolved.overwrite is not None:
            # Every row read here changes only under the table's lock, which the caller holds: the
            # reads agree without a transaction around them.
            with read_only(self._probes) as conn:
                if found is None:
                    found = index.find_files(conn, table.id, keys)
                for partition, bucket in sorted(leveled):
                    found += index.bucket_files(conn, table.id, partition, bucket)
                found += index.partition_samples(conn, table.id, counted)
                if resolved.overwrite is not None:
                    found += _replaced(conn, table, resolved.overwrite)
        live = LiveFiles.indexed(
            [(f.entry, f.added_in) for f in found if f.removed_in is None],
            [(f.entry.identifier, f.removed_in) for f in found if f.removed_in is not None],
        )
        for snapshot, delta in overlay:
            live.apply(delta, snapshot)
        live.snapshot_id = snapshot_id
        return live

    def catch_up(
        self,
        table: Table,
        latest: int,
        load: Callable[[int], Snapshot],
        manifests: ManifestStore,
        *,
        indexed_at: int | None = None,
    ) -> None:
        """Under the table's lock: bring the index to snapshot `latest`.

        `indexed_at`: where the caller read the index to stand under this lock, sparing that read."""
        if indexed_at == latest:
            return
        # Nearly always current: one read, no write transaction, on the commit path.
        with read_only(self._engine) as conn:
            if index.index_snapshot(conn, table.id) == latest:
                return
        with self._engine.begin() as conn:
            at = index.index_snapshot(conn, table.id)
            if at == latest:
                return
            if at is not None and at < latest <= at + MAX_DELTA_REPLAY:
                for snapshot_id in range(at + 1, latest + 1):
                    delta_list = load(snapshot_id).delta_manifest_list
                    delta = [e for m in manifests.read_list(delta_list) for e in manifests.read(m)]
                    apply(conn, table.id, (snapshot_id, delta))
                index.set_index_snapshot(conn, table.id, latest)
                return
            started = time.perf_counter()
            live = manifests.scan(load(latest)) if latest else []
            index.replace_index(conn, table.id, latest, live)
        if latest:
            log.info(
                "indexed %d live files of %s at snapshot %d in %.1f s",
                len(live), table.id, latest, time.perf_counter() - started,
            )  # fmt: skip


def advance(
    conn: Connection,
    table_id: str,
    deltas: Sequence[Delta],
    records: Mapping[int, Sequence[bytes]] | None = None,
) -> None:
    """Inside the commit point's transaction: advance the index by each new snapshot's delta, in order,
    and record that it stands at the last one. `records`: the deltas' entries already encoded, by
    snapshot id, where the manifest write made them."""
    for delta in deltas:
        apply(conn, table_id, delta, records.get(delta[0]) if records else None)
    if deltas:
        index.set_index_snapshot(conn, table_id, deltas[-1][0])


def forgets_at(snapshot_id: int) -> bool:
    """Whether the index forgets old removed rows when it advances to this snapshot."""
    return snapshot_id % FORGET_EVERY == 0


def apply(conn: Connection, table_id: str, delta: Delta, records: Sequence[bytes] | None = None) -> None:
    """Advance the index by one snapshot's delta, inside the caller's transaction."""
    snapshot_id, entries = delta
    forget_before = snapshot_id - REMEMBER_REMOVED if forgets_at(snapshot_id) else None
    index.apply_delta(conn, table_id, snapshot_id, entries, records, forget_before=forget_before)


def _replaced(conn: Connection, table: Table, target: OverwriteTarget) -> list[index.IndexedFile]:
    """The live files an overwrite may replace: whole table, listed partitions, or those a spec matches."""
    if target.whole_table:
        return index.partition_files(conn, table.id, None)
    if target.spec is None:
        return index.partition_files(conn, table.id, target.partitions)
    matching = [p for p in index.live_partitions(conn, table.id) if target.matches(p, table.shape)]
    return index.partition_files(conn, table.id, matching)
