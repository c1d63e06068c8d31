"""Maintenance racing another replica, on SQLite and PostgreSQL, local disk and S3: an expiration
elsewhere under a commit's post-commit work, and a maintenance action whose lease is force-released
before it is written.

`services` plays this replica; the test makes the other replica's moves for real (files deleted on
storage, rows deleted in the database, the lease force-released) while this replica's thread stands
paused at the exact point of the race (tests/support/pause.py), so the interleaving is the same on every run.
"""

from __future__ import annotations

import logging
import uuid

import pytest
from fastapi.testclient import TestClient

from coordinator.db import repositories as repo
from coordinator.errors import CommitConflict, SnapshotNotFound
from coordinator.services import Services
from coordinator.usecases.maintenance.table_actions import TableActions
from tests.support.commits import commit
from tests.support.paimon_files import (
    PaimonTable,
    create_table,
    delete_file,
    file_exists,
    file_names,
    write_bytes,
)
from tests.support.pause import PausedCall

STORES = ("local", "s3")

FIELDS = {"id": "BIGINT"}


def append(api: TestClient, table: PaimonTable, row_id: int) -> int:
    """Commit one data file of one row; returns the new snapshot id."""
    snapshots = commit(api, table, [table.append_message([{"id": row_id}])], user="writer", identifier=row_id)
    return int(snapshots[-1]["id"])


def actions(api: TestClient, table: PaimonTable) -> list[str]:
    response = api.get(f"/tables/{table.id}/commits?limit=100")
    assert response.status_code == 200, response.text
    return [c["action"] for c in response.json()["commits"]]


def test_an_expiration_elsewhere_under_post_commit_work_is_logged_not_raised(
    services: Services, api: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    table = create_table(api, "maint", f"raced_{uuid.uuid4().hex[:6]}", FIELDS)
    latest = [append(api, table, i) for i in range(1, 4)][-1]
    # This replica has not yet looked at the table's earliest snapshot: its post-commit check finds
    # snapshot 1 on storage, and stands just before reading it.
    checking = PausedCall(
        lambda: services.maintenance.after_commit(table.id, latest), at=TableActions.snapshot
    ).start()
    # Meanwhile another replica expires snapshot 1: storage first, then the database.
    delete_file(f"{table.location}/snapshot/snapshot-1")
    write_bytes(f"{table.location}/snapshot/EARLIEST", b"2")
    with services.engine.begin() as conn:
        repo.delete_snapshots(conn, table.id, below=2)
    checking.resume()  # the commit's answer stands: nothing is raised

    [failed] = [r for r in caplog.records if r.name.startswith("coordinator.usecases.maintenance")]
    assert failed.levelno == logging.ERROR
    assert table.id in failed.getMessage()
    assert failed.exc_info is not None
    assert failed.exc_info[0] is SnapshotNotFound
    assert [n for n in file_names(f"{table.location}/snapshot") if n.startswith("snapshot-")] == [
        "snapshot-2",
        "snapshot-3",
    ]


def test_a_lease_lost_before_a_maintenance_action_is_written_is_a_retryable_lock_lost(
    services: Services, api: TestClient
) -> None:
    table = create_table(api, "maint", f"fenced_{uuid.uuid4().hex[:6]}", FIELDS)
    append(api, table, 1)
    lock_id = services.tables.get(table.id).lock_id
    # The action holds the table, has written the tag file, and stalls before its fenced transaction
    # (a GC pause, a frozen VM) long enough for an admin to force-release the lease.
    tagging = PausedCall(
        lambda: services.maintenance.create_tag(table.id, "v1", None, actor="ops"), at=TableActions.record
    ).start()
    assert file_exists(f"{table.location}/tag/tag-v1")
    released = services.locks.force_release(lock_id)
    assert released is not None
    assert "maintenance" in released.owner
    with pytest.raises(CommitConflict) as fenced:
        tagging.resume()

    assert fenced.value.status_code == 409
    assert (fenced.value.conflict.type, fenced.value.conflict.retryable) == ("LOCK_LOST", True)
    # Nothing of the fenced action is left: no tag file, no history row, nothing counted.
    assert not file_exists(f"{table.location}/tag/tag-v1")
    assert api.get(f"/tables/{table.id}/tags").json()["tags"] == []
    assert actions(api, table) == ["commit"]
    assert tags_recorded(services) is None
    # Retrying, as the conflict says, succeeds; the recorded action is counted.
    assert services.maintenance.create_tag(table.id, "v1", None, actor="ops").snapshot_id == 1
    assert [t["name"] for t in api.get(f"/tables/{table.id}/tags").json()["tags"]] == ["v1"]
    assert actions(api, table) == ["create-tag", "commit"]
    assert tags_recorded(services) == 1


def tags_recorded(services: Services) -> float | None:
    """The maintenance counter of this replica for create-tag (None before the first)."""
    return services.metrics.registry.get_sample_value(
        "coordinator_maintenance_actions_total", {"action": "create-tag"}
    )
