"""Rollback: a retained snapshot or a tag becomes the latest again; later snapshots and tags go, and so do
the files only they referenced."""

from __future__ import annotations

from coordinator.commit.table_state import TableStates
from coordinator.db import repositories as repo
from coordinator.db.repositories import live_files as index
from coordinator.domain.file_references import FileReferences, only_removed
from coordinator.errors import CommitConflict, InvalidRequest, TagNotFound
from coordinator.usecases.maintenance.expiration import Expiration
from coordinator.usecases.maintenance.table_actions import Deleted, TableActions
from coordinator.usecases.snapshot_file import SnapshotFile
from coordinator.usecases.table_files import TableFiles
from coordinator.usecases.table_stats import stats_on_storage
from coordinator_client.models import ConflictModel, RollbackRequest, RollbackResponse
from paimon_format.manifest import FileKind
from paimon_format.snapshot import EARLIEST, LATEST, Snapshot, format_hint


class Rollback:
    def __init__(self, actions: TableActions, states: TableStates, expiration: Expiration) -> None:
        self._actions = actions
        self._states = states
        self._expiration = expiration

    def rollback(
        self, table_id: str, request: RollbackRequest, *, actor: str, from_snapshot: int | None = None
    ) -> RollbackResponse:
        """Make a retained snapshot or a tag the latest again. The next commit gets the id after the target.
        With `from_snapshot`, only if that is still the latest (checked under the table's lock).

        Raises: TableNotFound, SnapshotNotFound, TagNotFound, InvalidRequest, LockUnavailable,
        CommitConflict (LOCK_LOST; LATEST_SNAPSHOT_MOVED when the latest is not `from_snapshot`).
        """
        if (request.snapshot_id is None) == (request.tag is None):
            raise InvalidRequest("give exactly one of snapshotId and tag", field="snapshotId")
        actions = self._actions
        fileio = actions.fileio
        table = actions.tables.get(table_id)
        with actions.hold(table) as hold:
            tags = actions.tags(table)
            if request.tag is not None:
                target = tags.get(request.tag)
                if target is None:
                    raise TagNotFound(f"tag {request.tag!r} of {table_id} does not exist")
            else:
                target = actions.retained_snapshot(table, request.snapshot_id)
            latest = actions.tables.latest_snapshot_id(table.id)
            if from_snapshot is not None and from_snapshot != latest:
                raise CommitConflict(
                    ConflictModel(
                        type="LATEST_SNAPSHOT_MOVED",
                        message=f"rollback from snapshot {from_snapshot} of {table_id} refused: the latest "
                        f"snapshot is {latest}",
                    )
                )
            earliest = actions.earliest_id(table) or target.id
            removed = [actions.snapshot(table, i) for i in range(max(earliest, target.id + 1), latest + 1)]
            removed_tags = {n: s for n, s in tags.items() if s.id > target.id}
            kept_tags = [s for s in tags.values() if s.id <= target.id]

            with actions.audited(hold, table, actor=actor, action="rollback"):
                files = actions.files(table)
                gone = actions.deletable(
                    table, _only_removed(files, target, removed, removed_tags, kept_tags)
                )

            # The target's size, from its live files (maintenance may read storage; requests never do).
            stats = stats_on_storage(fileio, table, target)

            # Storage first, newest first: a reader never sees a gap, and a crash before the database
            # moves leaves the table as it was, minus snapshots the next rollback removes again.
            if not fileio.exists(table.layout.snapshot(target.id)):
                fileio.write_new(table.layout.snapshot(target.id), target.to_json().encode())
            for s in reversed(removed):
                fileio.delete(table.layout.snapshot(s.id))
            fileio.overwrite(table.layout.hint(LATEST), format_hint(target.id))
            if target.id < earliest:
                fileio.overwrite(table.layout.hint(EARLIEST), format_hint(target.id))
            for tag_name in removed_tags:
                fileio.delete(table.layout.tag(tag_name))
            deleted = Deleted.of(gone, snapshots=len(removed))
            details: dict[str, object] = {
                "to": {"snapshotId": target.id, **({"tag": request.tag} if request.tag else {})},
                "fromSnapshotId": latest,
                "removedSnapshots": [s.id for s in removed],
                "removedTags": sorted(removed_tags),
                "deleted": deleted.model().model_dump(by_alias=True),
            }
            with actions.recorded(hold, table, actor=actor, action="rollback", details=details) as conn:
                repo.set_latest(conn, table.id, target.id)
                repo.set_stats(
                    conn,
                    table.id,
                    total_record_count=stats.total_record_count,
                    file_count=stats.file_count,
                    file_bytes=stats.file_bytes,
                )
                # The index only moves forward by deltas: the next commit indexes the target afresh.
                index.reset_index(conn, table.id)
                repo.delete_snapshots(conn, table.id, above=target.id)
                if repo.get_snapshot(conn, table.id, target.id) is None:
                    repo.insert_snapshots(conn, table.id, [SnapshotFile.of(target).row(published=True)])
            self._states.invalidate(table.id)
            # Only now that no snapshot names them: a crash before this leaves orphans, never a hole.
            for paths in (gone.data, gone.changelog, gone.manifests):
                actions.delete(table, paths)
            self._expiration.forget(table.id)
        return RollbackResponse(
            latest_snapshot_id=target.id,
            removed_snapshots=[s.id for s in removed],
            removed_tags=sorted(removed_tags),
            deleted=deleted.model(),
        )


def _only_removed(
    files: TableFiles,
    target: Snapshot,
    removed: list[Snapshot],
    removed_tags: dict[str, Snapshot],
    kept_tags: list[Snapshot],
) -> FileReferences:
    """The files only the removed snapshots and tags reference."""
    keep = FileReferences.of(
        data=files.live_paths(target).union(*(files.live_paths(s) for s in kept_tags)),
        manifests=files.manifest_paths(target).union(*(files.manifest_paths(s) for s in kept_tags)),
    )
    # Every file a removed snapshot or tag could read: what was live at the first removed snapshot, what
    # later ones added, and what the removed tags hold.
    data = files.live_paths(removed[0]) if removed else set()
    for s in removed:
        data |= files.delta_paths(s, FileKind.ADD)
    for s in removed_tags.values():
        data |= files.live_paths(s)
    return only_removed(
        FileReferences.of(
            data=data,
            changelog=set().union(*(files.changelog_paths(s) for s in removed)),
            manifests=set().union(*(files.manifest_paths(s) for s in [*removed, *removed_tags.values()])),
        ),
        keep,
    )
