"""Tags: a `tag/tag-<name>` file holds a copy of a snapshot and keeps its files until it is deleted."""

from __future__ import annotations

from coordinator.domain.file_references import FileReferences, only_removed
from coordinator.errors import TagAlreadyExists, TagNotFound
from coordinator.usecases.maintenance.table_actions import Deleted, TableActions
from coordinator_client.models import DeletedFiles, TagModel
from paimon_format.snapshot import Snapshot


class Tags:
    def __init__(self, actions: TableActions) -> None:
        self._actions = actions

    def create_tag(self, table_id: str, name: str, snapshot_id: int | None, *, actor: str) -> TagModel:
        """Raises: TableNotFound, SnapshotNotFound, TagAlreadyExists, LockUnavailable, CommitConflict."""
        actions = self._actions
        table = actions.tables.get(table_id)
        with actions.hold(table) as hold:
            target = actions.retained_snapshot(table, snapshot_id)
            path = table.layout.tag(name)
            try:
                actions.fileio.write_new(path, target.to_json().encode())
            except FileExistsError:
                raise TagAlreadyExists(f"tag {name!r} of {table_id} already exists") from None
            try:
                details: dict[str, object] = {"tag": name, "snapshotId": target.id}
                actions.record(hold, table, actor=actor, action="create-tag", details=details)
            except BaseException:
                actions.fileio.delete(path)
                raise
        return tag_model(name, target)

    def list_tags(self, table_id: str) -> list[TagModel]:
        actions = self._actions
        table = actions.tables.get(table_id)
        return [tag_model(name, s) for name, s in sorted(actions.tags(table).items())]

    def delete_tag(self, table_id: str, name: str, *, actor: str) -> DeletedFiles:
        """Delete a tag and, if its snapshot has expired, the files only it kept.

        Raises: TableNotFound, TagNotFound, LockUnavailable, CommitConflict (LOCK_LOST).
        """
        actions = self._actions
        table = actions.tables.get(table_id)
        with actions.hold(table) as hold:
            tags = actions.tags(table)
            tagged = tags.pop(name, None)
            if tagged is None:
                raise TagNotFound(f"tag {name!r} of {table_id} does not exist")
            deleted = Deleted()
            earliest = actions.earliest_id(table)
            gone = FileReferences()
            if earliest is not None and tagged.id < earliest:
                with actions.audited(hold, table, actor=actor, action="delete-tag"):
                    files = actions.files(table)
                    kept = [actions.snapshot(table, earliest), *tags.values()]
                    removed = FileReferences.of(
                        data=files.live_paths(tagged), manifests=files.manifest_paths(tagged)
                    )
                    keep = FileReferences.of(
                        data=set().union(*(files.live_paths(s) for s in kept)),
                        manifests=set().union(*(files.manifest_paths(s) for s in kept)),
                    )
                    gone = actions.deletable(table, only_removed(removed, keep))
            # The tag goes only once its files are known to be the table's: a refusal leaves it.
            actions.fileio.delete(table.layout.tag(name))
            deleted.data_files = actions.delete(table, gone.data)
            deleted.manifests = actions.delete(table, gone.manifests)
            details: dict[str, object] = {
                "tag": name,
                "snapshotId": tagged.id,
                "deleted": deleted.model().model_dump(by_alias=True),
            }
            actions.record(hold, table, actor=actor, action="delete-tag", details=details)
        return deleted.model()


def tag_model(name: str, snapshot: Snapshot) -> TagModel:
    return TagModel(
        name=name,
        snapshot_id=snapshot.id,
        schema_id=snapshot.schema_id,
        commit_time=snapshot.time_millis,
        record_count=snapshot.total_record_count,
    )
