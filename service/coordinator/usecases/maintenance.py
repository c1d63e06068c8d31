"""Table maintenance under the table lock: snapshot expiration, tags, consumers, rollback, orphan cleanup
and option changes, each recorded in the commit history.

Everything that deletes works the same way: collect what the snapshots and tags that stay reference,
collect what the removed ones referenced, and delete the difference in Paimon's safe order (data files,
changelog files, manifests, then snapshot files), so that a crash half way leaves at worst files nobody
references, which orphan cleanup removes later, and never a snapshot pointing at a missing file.
Storage, not the database, is the truth for tags and consumers: Paimon's engines and pypaimon read and
write the same `tag/tag-<name>` and `consumer/consumer-<id>` files.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import Connection, Engine

from coordinator.db import repositories as repo
from coordinator.domain.retention import Retention, expire_end
from coordinator.errors import (
    ConsumerNotFound,
    InvalidRequest,
    LockUnavailable,
    SnapshotNotFound,
    TagAlreadyExists,
    TagNotFound,
)
from coordinator.locks.base import Lease, LockBackend, process_owner
from coordinator.locks.lock_table import MAX_POLL_SECONDS
from coordinator.locks.renewal import LeaseKeeper
from coordinator.observability.metrics import Metrics
from coordinator.storage.fileio import FileIO
from coordinator.usecases.commits import Committer
from coordinator.usecases.reads import Reads
from coordinator.usecases.snapshot_file import SnapshotFile
from coordinator.usecases.snapshots_on_storage import find_earliest_snapshot_id
from coordinator.usecases.table_files import TableFiles
from coordinator.usecases.tables import Table, Tables
from coordinator_client.format.manifest import FileKind
from coordinator_client.format.snapshot import EARLIEST, LATEST, Snapshot, format_hint
from coordinator_client.models import (
    CleanOrphansRequest,
    CleanOrphansResponse,
    ConsumerModel,
    DeletedFiles,
    ExpireResponse,
    RollbackRequest,
    RollbackResponse,
    SetOptionsRequest,
    TagModel,
)

log = logging.getLogger(__name__)

AUTO_EXPIRE = "auto-expire"
"""The actor the history names for expiration that runs after commits."""

FIXED_OPTIONS = frozenset(
    {"bucket", "bucket-key", "primary-key", "partition", "merge-engine", "sequence.field", "path"}
)
"""Options that decide where rows and files are: changing them would orphan what is written."""

WRITE_ONLY = "write-only"
"""Paimon's option for tables whose expiration runs elsewhere: commits then never expire snapshots."""

_NOT_ORPHANS = ("schema", "snapshot", "tag", "consumer", "branch", "index", "statistics")
"""Top-level folders that orphan cleanup never touches: metadata, and index and statistics files, which
only Paimon's engines write (the coordinator does not read index manifests)."""


@dataclass
class _Deleted:
    snapshots: int = 0
    data_files: int = 0
    changelog_files: int = 0
    manifests: int = 0

    def add(self, other: _Deleted) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def model(self) -> DeletedFiles:
        return DeletedFiles(**dataclasses.asdict(self))


@dataclass
class _Batch:
    """One lock hold of an expiration."""

    snapshots: int
    deleted: _Deleted
    consumers: list[str]
    maybe_more: bool = False
    """The batch stopped at snapshot.expire.limit, so another may find more; any other bound (the
    retained minimum, a consumer, time-retained) holds for the next batch too."""


class Maintenance:
    def __init__(
        self,
        engine: Engine,
        fileio: FileIO,
        tables: Tables,
        locks: LockBackend,
        committer: Committer,
        reads: Reads,
        *,
        lease_seconds: float,
        acquire_timeout_seconds: float,
        metrics: Metrics,
    ) -> None:
        self._engine = engine
        self._fileio = fileio
        self._tables = tables
        self._locks = locks
        self._committer = committer
        self._reads = reads
        self._lease_seconds = lease_seconds
        self._acquire_timeout = acquire_timeout_seconds
        self._metrics = metrics
        self._instance = process_owner()
        self._earliest: dict[str, tuple[int, int]] = {}
        """Per table, the earliest snapshot's id and commit time as last seen: the cheap test that
        spares a commit any storage access when nothing can expire."""
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="expire")
        self._scheduled: set[str] = set()
        self._running: dict[str, int] = {}
        """Expirations under way in this process, per table: a commit does not start another."""
        self._guard = threading.Lock()

    def close(self) -> None:
        self._background.shutdown(wait=True)

    # ------------------------------------------------------------ options

    def set_options(self, table_id: str, request: SetOptionsRequest, *, actor: str) -> Table:
        """Write the next schema version with the options changed.

        Raises:
            TableNotFound, InvalidRequest (naming the option).
        """
        table = self._tables.get(table_id)
        for key in [*request.set, *request.remove]:
            if key in FIXED_OPTIONS:
                where = "set" if key in request.set else "remove"
                raise InvalidRequest(
                    f"option {key!r} cannot be changed on an existing table", field=f"{where}.{key}"
                )
        with self._locked(table) as lease:
            table = self._tables.refresh(table_id)
            schema = table.shape.schema
            options = {k: v for k, v in schema.options.items() if k not in request.remove}
            options.update(request.set)
            try:
                Retention.of(options)
            except ValueError as error:
                named = next((k for k in request.set if k in str(error)), None)
                raise InvalidRequest(str(error), field=f"set.{named}" if named else "set") from None
            new = dataclasses.replace(
                schema, id=schema.id + 1, options=options, time_millis=int(time.time() * 1000)
            )
            self._fileio.write_new(table.layout.schema(new.id), new.to_json().encode())
            try:
                with self._engine.begin() as conn:
                    self._fence(conn, lease)
                    repo.update_schema(conn, table.id, new.id, new.to_json())
                    self._history(
                        conn,
                        table.id,
                        actor=actor,
                        action="set-options",
                        details={
                            "schemaId": new.id,
                            "set": dict(request.set),
                            "removed": list(request.remove),
                        },
                    )
            except BaseException:
                self._fileio.delete(table.layout.schema(new.id))
                raise
            self._committer.forget_state(table.id)
            return self._tables.refresh(table_id)

    # ------------------------------------------------------------ expiration

    def expire(self, table_id: str, *, actor: str) -> ExpireResponse:
        """Expire what the table's retention allows, one lock hold per `snapshot.expire.limit` snapshots.

        Between batches the lock is free and commits waiting in this process go first.
        """
        table = self._tables.get(table_id)
        with self._guard:
            self._running[table_id] = self._running.get(table_id, 0) + 1
        try:
            return self._expire_all(table, actor)
        finally:
            with self._guard:
                self._running[table_id] -= 1

    def _expire_all(self, table: Table, actor: str) -> ExpireResponse:
        table_id = table.id
        deleted, expired, batches, consumers = _Deleted(), 0, 0, []
        while True:
            with self._locked(table) as lease:
                table = self._tables.refresh(table_id)
                batch = self._expire_batch(table, lease, actor)
            expired += batch.snapshots
            consumers += batch.consumers
            deleted.add(batch.deleted)
            if batch.snapshots:
                batches += 1
            if not batch.maybe_more:
                break
            self._let_commits_through(table_id)
        if expired:
            self._metrics.expired_snapshots.inc(expired)
            self._metrics.expirations.labels("after-commit" if actor == AUTO_EXPIRE else "api").inc()
        latest = self._tables.latest_snapshot_id(table_id)
        return ExpireResponse(
            expired_snapshots=expired,
            batches=batches,
            earliest_snapshot_id=self._earliest_id(table),
            latest_snapshot_id=latest or None,
            expired_consumers=consumers,
            deleted=deleted.model(),
        )

    def after_commit(self, table_id: str, latest: int) -> None:
        """Expire after a commit when the retention may allow it: in the caller's thread (execution-mode
        sync) or on the background thread (async). A failure is logged: the commit stands."""
        table = self._tables.get(table_id)
        options = table.shape.schema.options
        with self._guard:
            if options.get(WRITE_ONLY, "false").lower() == "true" or self._running.get(table_id):
                return  # expiration is left to someone else, or already under way here
        try:
            retention = Retention.of(options)
        except ValueError:
            return
        if not self._may_expire(table, retention, latest):
            return
        if retention.execution_mode == "sync":
            self._expire_quietly(table_id)
            return
        with self._guard:
            if table_id in self._scheduled:
                return
            self._scheduled.add(table_id)
        self._background.submit(self._expire_scheduled, table_id)

    def _expire_scheduled(self, table_id: str) -> None:
        with self._guard:
            self._scheduled.discard(table_id)
        self._expire_quietly(table_id)

    def _expire_quietly(self, table_id: str) -> None:
        try:
            self.expire(table_id, actor=AUTO_EXPIRE)
        except Exception:
            log.exception("expiring snapshots of %s after a commit failed", table_id)

    def _may_expire(self, table: Table, retention: Retention, latest: int) -> bool:
        known = self._earliest.get(table.id)
        if known is None:
            earliest = self._earliest_id(table)
            if earliest is None:
                return False
            known = self._earliest[table.id] = (earliest, self._snapshot(table, earliest).time_millis)
        earliest, earliest_time = known
        count = latest - earliest + 1
        if count <= retention.retained_min:
            return False
        if count > retention.retained_max:
            return True
        return earliest_time < _now_millis() - retention.time_retained_ms

    def _expire_batch(self, table: Table, lease: Lease, actor: str) -> _Batch:
        retention = Retention.of(table.shape.schema.options)
        expired_consumers = self._expire_idle_consumers(table, retention)
        earliest = self._earliest_id(table)
        latest = self._tables.latest_snapshot_id(table.id)
        if earliest is None or latest == 0:
            return _Batch(0, _Deleted(), expired_consumers)
        consumers = [c.next_snapshot_id for c in self._consumer_models(table)]
        snapshots: dict[int, Snapshot] = {}

        def snapshot(snapshot_id: int) -> Snapshot:
            if snapshot_id not in snapshots:
                snapshots[snapshot_id] = self._snapshot(table, snapshot_id)
            return snapshots[snapshot_id]

        end = expire_end(
            earliest,
            latest,
            retention,
            consumer_next=min(consumers) if consumers else None,
            time_millis_of=lambda i: snapshot(i).time_millis,
            now_millis=_now_millis(),
        )
        if end <= earliest:
            self._earliest[table.id] = (earliest, snapshot(earliest).time_millis)
            return _Batch(0, _Deleted(), expired_consumers)
        files = TableFiles(self._fileio, table)
        tags = self._tags(table)
        kept = snapshot(end)
        keep_data = files.live_paths(kept).union(*(files.live_paths(t) for t in tags.values()))
        keep_manifests = files.manifest_paths(kept).union(*(files.manifest_paths(t) for t in tags.values()))
        expired = [snapshot(i) for i in range(earliest, end)]
        # A file removed by a snapshot in (earliest, end] was live only in snapshots that now expire.
        data = set().union(
            *(files.delta_paths(snapshot(i), FileKind.DELETE) for i in range(earliest + 1, end + 1))
        )
        changelog = set().union(*(files.changelog_paths(s) for s in expired))
        manifests = set().union(*(files.manifest_paths(s) for s in expired))
        deleted = _Deleted(
            data_files=self._delete(data - keep_data),
            changelog_files=self._delete(changelog - keep_data),
            manifests=self._delete(manifests - keep_manifests),
        )
        for s in expired:  # oldest first: what is left is always a contiguous range
            self._fileio.delete(table.layout.snapshot(s.id))
        deleted.snapshots = len(expired)
        self._fileio.overwrite(table.layout.hint(EARLIEST), format_hint(end))
        with self._engine.begin() as conn:
            self._fence(conn, lease)
            repo.delete_snapshots(conn, table.id, below=end)
            self._history(
                conn,
                table.id,
                actor=actor,
                action="expire",
                details={
                    "snapshots": [earliest, end - 1],
                    "earliestSnapshotId": end,
                    "expiredConsumers": expired_consumers,
                    "deleted": deleted.model().model_dump(by_alias=True),
                },
            )
        self._earliest[table.id] = (end, kept.time_millis)
        return _Batch(len(expired), deleted, expired_consumers, len(expired) == retention.expire_limit)

    def _let_commits_through(self, table_id: str) -> None:
        """Between two batches: commits queued in this process take the lock first, and waiters in other
        processes get at least one attempt (they poll at most MAX_POLL_SECONDS apart)."""
        deadline = time.monotonic() + self._acquire_timeout
        while self._committer.queued(table_id) and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(MAX_POLL_SECONDS * 1.2)

    # ------------------------------------------------------------ tags

    def create_tag(self, table_id: str, name: str, snapshot_id: int | None, *, actor: str) -> TagModel:
        """Raises: TableNotFound, SnapshotNotFound, TagAlreadyExists."""
        table = self._tables.get(table_id)
        with self._locked(table) as lease:
            target = self._retained_snapshot(table, snapshot_id, field="snapshotId")
            path = table.layout.tag(name)
            try:
                self._fileio.write_new(path, target.to_json().encode())
            except FileExistsError:
                raise TagAlreadyExists(f"tag {name!r} of {table_id} already exists") from None
            try:
                self._record(lease, table, actor, "create-tag", {"tag": name, "snapshotId": target.id})
            except BaseException:
                self._fileio.delete(path)
                raise
        return _tag_model(name, target)

    def list_tags(self, table_id: str) -> list[TagModel]:
        table = self._tables.get(table_id)
        return [_tag_model(name, s) for name, s in sorted(self._tags(table).items())]

    def delete_tag(self, table_id: str, name: str, *, actor: str) -> DeletedFiles:
        """Delete a tag and, if its snapshot has expired, the files only it kept.

        Raises: TableNotFound, TagNotFound.
        """
        table = self._tables.get(table_id)
        with self._locked(table) as lease:
            tags = self._tags(table)
            tagged = tags.pop(name, None)
            if tagged is None:
                raise TagNotFound(f"tag {name!r} of {table_id} does not exist")
            self._fileio.delete(table.layout.tag(name))
            deleted = _Deleted()
            earliest = self._earliest_id(table)
            if earliest is not None and tagged.id < earliest:
                files = TableFiles(self._fileio, table)
                kept = [self._snapshot(table, earliest), *tags.values()]
                keep_data = set().union(*(files.live_paths(s) for s in kept))
                keep_manifests = set().union(*(files.manifest_paths(s) for s in kept))
                deleted.data_files = self._delete(files.live_paths(tagged) - keep_data)
                deleted.manifests = self._delete(files.manifest_paths(tagged) - keep_manifests)
            self._record(
                lease,
                table,
                actor,
                "delete-tag",
                {"tag": name, "snapshotId": tagged.id, "deleted": deleted.model().model_dump(by_alias=True)},
            )
        return deleted.model()

    # ------------------------------------------------------------ rollback

    def rollback(self, table_id: str, request: RollbackRequest, *, actor: str) -> RollbackResponse:
        """Make a retained snapshot or a tag the latest again: later snapshots and tags are removed, and
        the files only they referenced are deleted. The next commit gets the id after the target.

        Raises: TableNotFound, SnapshotNotFound, TagNotFound, InvalidRequest.
        """
        if (request.snapshot_id is None) == (request.tag is None):
            raise InvalidRequest("give exactly one of snapshotId and tag", field="snapshotId")
        table = self._tables.get(table_id)
        with self._locked(table) as lease:
            tags = self._tags(table)
            if request.tag is not None:
                target = tags.get(request.tag)
                if target is None:
                    raise TagNotFound(f"tag {request.tag!r} of {table_id} does not exist")
            else:
                target = self._retained_snapshot(table, request.snapshot_id, field="snapshotId")
            latest = self._tables.latest_snapshot_id(table.id)
            earliest = self._earliest_id(table) or target.id
            removed = [self._snapshot(table, i) for i in range(max(earliest, target.id + 1), latest + 1)]
            removed_tags = {n: s for n, s in tags.items() if s.id > target.id}
            kept_tags = [s for s in tags.values() if s.id <= target.id]

            files = TableFiles(self._fileio, table)
            keep_data = files.live_paths(target).union(*(files.live_paths(s) for s in kept_tags))
            keep_manifests = files.manifest_paths(target).union(*(files.manifest_paths(s) for s in kept_tags))
            # Every file a removed snapshot or tag could read: what was live at the first removed
            # snapshot, what later ones added, and what the removed tags hold.
            data = files.live_paths(removed[0]) if removed else set()
            for s in removed:
                data |= files.delta_paths(s, FileKind.ADD)
            for s in removed_tags.values():
                data |= files.live_paths(s)
            changelog = set().union(*(files.changelog_paths(s) for s in removed))
            manifests = set().union(*(files.manifest_paths(s) for s in [*removed, *removed_tags.values()]))

            # Storage first, newest first: a reader never sees a gap, and a crash before the database
            # moves leaves the table as it was, minus snapshots the next rollback removes again.
            if not self._fileio.exists(table.layout.snapshot(target.id)):
                self._fileio.write_new(table.layout.snapshot(target.id), target.to_json().encode())
            for s in reversed(removed):
                self._fileio.delete(table.layout.snapshot(s.id))
            self._fileio.overwrite(table.layout.hint(LATEST), format_hint(target.id))
            if target.id < earliest:
                self._fileio.overwrite(table.layout.hint(EARLIEST), format_hint(target.id))
            for tag_name in removed_tags:
                self._fileio.delete(table.layout.tag(tag_name))
            data -= keep_data
            changelog -= keep_data
            manifests -= keep_manifests
            deleted = _Deleted(len(removed), len(data), len(changelog), len(manifests))
            with self._engine.begin() as conn:
                self._fence(conn, lease)
                repo.set_latest(conn, table.id, target.id)
                repo.delete_snapshots(conn, table.id, above=target.id)
                if repo.get_snapshot(conn, table.id, target.id) is None:
                    repo.insert_snapshots(conn, table.id, [SnapshotFile.of(target).row(published=True)])
                self._history(
                    conn,
                    table.id,
                    actor=actor,
                    action="rollback",
                    details={
                        "to": {"snapshotId": target.id, **({"tag": request.tag} if request.tag else {})},
                        "fromSnapshotId": latest,
                        "removedSnapshots": [s.id for s in removed],
                        "removedTags": sorted(removed_tags),
                        "deleted": deleted.model().model_dump(by_alias=True),
                    },
                )
            self._committer.forget_state(table.id)
            # Only now that no snapshot names them: a crash before this leaves orphans, never a hole.
            for paths in (data, changelog, manifests):
                self._delete(paths)
            self._earliest.pop(table.id, None)
        return RollbackResponse(
            latest_snapshot_id=target.id,
            removed_snapshots=[s.id for s in removed],
            removed_tags=sorted(removed_tags),
            deleted=deleted.model(),
        )

    # ------------------------------------------------------------ consumers

    def set_consumer(
        self, table_id: str, consumer_id: str, next_snapshot_id: int, *, actor: str
    ) -> ConsumerModel:
        """Register or move a consumer; it protects `next_snapshot_id` and later from expiration.

        Raises: TableNotFound, InvalidRequest (a snapshot that is expired or beyond the next one).
        """
        table = self._tables.get(table_id)
        with self._locked(table) as lease:
            earliest = self._earliest_id(table)
            latest = self._tables.latest_snapshot_id(table.id)
            low = earliest if earliest is not None else 1
            if not low <= next_snapshot_id <= latest + 1:
                raise InvalidRequest(
                    f"nextSnapshotId must be between the earliest retained snapshot ({low}) and the next "
                    f"one ({latest + 1}), got {next_snapshot_id}",
                    field="nextSnapshotId",
                )
            path = table.layout.consumer(consumer_id)
            self._fileio.overwrite(path, json.dumps({"nextSnapshot": next_snapshot_id}).encode())
            self._record(
                lease,
                table,
                actor,
                "set-consumer",
                {"consumerId": consumer_id, "nextSnapshotId": next_snapshot_id},
            )
        return next(c for c in self._consumer_models(table) if c.consumer_id == consumer_id)

    def list_consumers(self, table_id: str) -> list[ConsumerModel]:
        return self._consumer_models(self._tables.get(table_id))

    def delete_consumer(self, table_id: str, consumer_id: str, *, actor: str) -> None:
        """Raises: TableNotFound, ConsumerNotFound."""
        table = self._tables.get(table_id)
        with self._locked(table) as lease:
            path = table.layout.consumer(consumer_id)
            if not self._fileio.exists(path):
                raise ConsumerNotFound(f"consumer {consumer_id!r} of {table_id} does not exist")
            self._fileio.delete(path)
            self._record(lease, table, actor, "delete-consumer", {"consumerId": consumer_id})

    def _consumer_models(self, table: Table) -> list[ConsumerModel]:
        out = []
        for stored in self._fileio.walk(table.layout.consumer_dir):
            name = stored.path.rsplit("/", 1)[-1]
            if not name.startswith("consumer-"):
                continue
            try:
                next_snapshot = int(json.loads(self._fileio.read(stored.path))["nextSnapshot"])
            except (FileNotFoundError, ValueError, KeyError, TypeError):
                continue  # deleted meanwhile, or not a consumer file
            out.append(
                ConsumerModel(
                    consumer_id=name[len("consumer-") :],
                    next_snapshot_id=next_snapshot,
                    modified_at=stored.modified_seconds,
                )
            )
        return sorted(out, key=lambda c: c.consumer_id)

    def _expire_idle_consumers(self, table: Table, retention: Retention) -> list[str]:
        if retention.consumer_expiration_ms is None:
            return []
        idle_since = time.time() - retention.consumer_expiration_ms / 1000
        expired = [c.consumer_id for c in self._consumer_models(table) if c.modified_at < idle_since]
        for consumer_id in expired:
            self._fileio.delete(table.layout.consumer(consumer_id))
        return expired

    # ------------------------------------------------------------ orphans

    def clean_orphans(
        self, table_id: str, request: CleanOrphansRequest, *, actor: str
    ) -> CleanOrphansResponse:
        """Delete (or, dry, list) files under the table that no retained snapshot or tag references, that
        are older than the threshold, and that no commit waiting in this process names."""
        table = self._tables.get(table_id)
        with self._locked(table) as lease:
            referenced = self._referenced(table)
            in_flight = self._committer.in_flight_file_names(table.id)
            older_than = time.time() - request.older_than_seconds
            root = table.layout.root.rstrip("/") + "/"
            orphans = []
            for stored in self._fileio.walk(table.layout.root):
                relative = stored.path[len(root) :] if stored.path.startswith(root) else stored.path
                top = relative.split("/", 1)[0]
                name = relative.rsplit("/", 1)[-1]
                if top in _NOT_ORPHANS or stored.path in referenced or name in in_flight:
                    continue
                if stored.modified_seconds >= older_than:
                    continue
                orphans.append(relative)
            orphans.sort()
            if not request.dry_run:
                self._delete(root + r for r in orphans)
                self._record(
                    lease,
                    table,
                    actor,
                    "clean-orphans",
                    {"olderThanSeconds": request.older_than_seconds, "files": orphans},
                )
        return CleanOrphansResponse(dry_run=request.dry_run, files=orphans)

    def _referenced(self, table: Table) -> set[str]:
        """Every path some retained snapshot or tag references: data, changelog and manifest files."""
        files = TableFiles(self._fileio, table)
        earliest = self._earliest_id(table)
        latest = self._tables.latest_snapshot_id(table.id)
        roots = list(self._tags(table).values())
        out: set[str] = set()
        if earliest is not None and latest:
            retained = [self._snapshot(table, i) for i in range(earliest, latest + 1)]
            out |= files.live_paths(retained[0])
            for s in retained:
                out |= files.delta_paths(s, FileKind.ADD) | files.changelog_paths(s) | files.manifest_paths(s)
        for s in roots:
            out |= files.live_paths(s) | files.manifest_paths(s)
        return out

    # ------------------------------------------------------------ shared

    @contextmanager
    def _locked(self, table: Table) -> Iterator[Lease]:
        owner = f"{self._instance}-maintenance-{uuid.uuid4().hex[:12]}"
        asked = time.perf_counter()
        lease = self._locks.acquire(table.lock_id, owner, self._acquire_timeout)
        acquired = time.perf_counter()
        self._metrics.lock_wait_seconds.labels("maintenance").observe(acquired - asked)
        try:
            with LeaseKeeper(self._locks, lease, self._lease_seconds):
                yield lease
        finally:
            self._locks.release(lease)
            self._metrics.lock_hold_seconds.labels("maintenance").observe(time.perf_counter() - acquired)

    def _history(
        self, conn: Connection, table_id: str, *, actor: str, action: str, details: dict[str, object]
    ) -> None:
        """Record a maintenance action in the table's history (inside the caller's fenced transaction)."""
        repo.insert_maintenance(conn, table_id, actor=actor, action=action, details=details, now=time.time())
        self._metrics.maintenance.labels(action).inc()

    def _fence(self, conn: Connection, lease: Lease) -> None:
        if not self._locks.still_held(conn, lease):
            raise LockUnavailable(
                f"the lease on {lease.lock_id} ran out during maintenance; nothing more was changed",
                retry_after_seconds=1,
            )

    def _record(
        self, lease: Lease, table: Table, actor: str, action: str, details: dict[str, object]
    ) -> None:
        with self._engine.begin() as conn:
            self._fence(conn, lease)
            self._history(conn, table.id, actor=actor, action=action, details=details)

    def _snapshot(self, table: Table, snapshot_id: int) -> Snapshot:
        return self._reads.snapshot(table.id, snapshot_id)

    def _retained_snapshot(self, table: Table, snapshot_id: int | None, *, field: str) -> Snapshot:
        latest = self._tables.latest_snapshot_id(table.id)
        if snapshot_id is None:
            if latest == 0:
                raise SnapshotNotFound(f"table {table.id} has no snapshot yet")
            snapshot_id = latest
        earliest = self._earliest_id(table)
        if earliest is None or not earliest <= snapshot_id <= latest:
            raise SnapshotNotFound(
                f"snapshot {snapshot_id} of {table.id} does not exist (retained: "
                f"{f'{earliest}..{latest}' if earliest is not None else 'none'})"
            )
        return self._snapshot(table, snapshot_id)

    def _earliest_id(self, table: Table) -> int | None:
        return find_earliest_snapshot_id(self._fileio, table.layout)

    def _tags(self, table: Table) -> dict[str, Snapshot]:
        tags = {}
        for stored in self._fileio.walk(table.layout.tag_dir):
            name = stored.path.rsplit("/", 1)[-1]
            if name.startswith("tag-"):
                try:
                    tags[name[len("tag-") :]] = Snapshot.from_json(self._fileio.read(stored.path))
                except FileNotFoundError:
                    continue
        return tags

    def _delete(self, paths: Iterable[str]) -> int:
        count = 0
        for path in paths:
            self._fileio.delete(path)
            count += 1
        return count


def _tag_model(name: str, snapshot: Snapshot) -> TagModel:
    return TagModel(
        name=name,
        snapshot_id=snapshot.id,
        schema_id=snapshot.schema_id,
        commit_time=snapshot.time_millis,
        record_count=snapshot.total_record_count,
    )


def _now_millis() -> int:
    return int(time.time() * 1000)
