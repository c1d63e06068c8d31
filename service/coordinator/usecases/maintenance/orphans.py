"""Orphan cleanup: files under the table that nothing retained references, left by crashes and by
writers that gave up."""

from __future__ import annotations

from coordinator.commit.in_flight import InFlight
from coordinator.domain.table_paths import has_control, inside
from coordinator.usecases.maintenance.table_actions import TableActions
from coordinator.usecases.tables import Table
from coordinator_client.models import CleanOrphansRequest, CleanOrphansResponse
from paimon_format.manifest import FileKind

_NOT_ORPHANS = ("schema", "snapshot", "tag", "consumer", "branch", "index", "statistics")
"""Top-level folders that orphan cleanup never touches: metadata, and index and statistics files, which
only Paimon's engines write (the coordinator does not read index manifests)."""


class Orphans:
    def __init__(self, actions: TableActions, in_flight: InFlight) -> None:
        self._actions = actions
        self._in_flight = in_flight

    def clean_orphans(
        self, table_id: str, request: CleanOrphansRequest, *, actor: str
    ) -> CleanOrphansResponse:
        """Delete (or, dry, list) files under the table that no retained snapshot or tag references, that
        are older than the threshold, and that no commit waiting in this process names.

        Raises: TableNotFound, LockUnavailable, CommitConflict (LOCK_LOST).
        """
        actions = self._actions
        table = actions.tables.get(table_id)
        with actions.hold(table) as hold, actions.audited(hold, table, actor=actor, action="clean-orphans"):
            referenced = self._referenced(table)
            in_flight = self._in_flight.file_names(table.id)
            older_than = actions.clock.now() - request.older_than_seconds
            root = table.layout.root.rstrip("/") + "/"
            orphans = []
            for stored in actions.fileio.walk(table.layout.root):
                relative = stored.path[len(root) :] if stored.path.startswith(root) else stored.path
                top = relative.split("/", 1)[0]
                name = relative.rsplit("/", 1)[-1]
                if top in _NOT_ORPHANS or stored.path in referenced or name in in_flight:
                    continue
                if not inside(table.layout.root, stored.path) or has_control(stored.path):
                    continue  # an odd name (control characters): not for a delete to guess at
                if stored.modified_seconds >= older_than:
                    continue
                orphans.append(relative)
            orphans.sort()
            if not request.dry_run:
                actions.delete(table, [root + r for r in orphans])
                details: dict[str, object] = {
                    "olderThanSeconds": request.older_than_seconds,
                    "files": orphans,
                }
                actions.record(hold, table, actor=actor, action="clean-orphans", details=details)
        return CleanOrphansResponse(dry_run=request.dry_run, files=orphans)

    def _referenced(self, table: Table) -> set[str]:
        """Every path some retained snapshot or tag references: data, changelog and manifest files."""
        actions = self._actions
        files = actions.files(table)
        earliest = actions.earliest_id(table)
        latest = actions.tables.latest_snapshot_id(table.id)
        out: set[str] = set()
        if earliest is not None and latest:
            retained = [actions.snapshot(table, i) for i in range(earliest, latest + 1)]
            out |= files.live_paths(retained[0])
            for s in retained:
                out |= files.delta_paths(s, FileKind.ADD) | files.changelog_paths(s) | files.manifest_paths(s)
        for s in actions.tags(table).values():
            out |= files.live_paths(s) | files.manifest_paths(s)
        return out
