"""An answer, once the commit stands, stays: work after the commit point and publication (retention, the
commit's log line) may fail, and the committer still gets its 201; the failure is logged and counted.

The failures are real: a data file that expiration must delete sits in a folder nothing can be deleted
from (chmod for a normal user; the immutable attribute for root, whom chmod does not stop), and a hook
registered the way the service registers retention raises.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from coordinator.services import Services
from tests.support.commits import append_commit
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows, sorted_rows

FIELDS = {"dt": "STRING", "id": "BIGINT"}
KEEP_ONE = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}


@contextmanager
def undeletable(folder: Path) -> Iterator[None]:
    """Nothing in `folder` can be deleted (or created) until the block ends."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    subprocess.run(["chattr", "+i", str(folder)], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def failures(services: Services, step: str) -> float:
    """This instance's count of failed post-commit work of one step."""
    value = services.metrics.registry.get_sample_value(
        "coordinator_post_commit_failures_total", {"step": step}
    )
    return value or 0.0


def services_of(api: TestClient) -> Services:
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    return services


def commit(api: TestClient, table: PaimonTable, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post(f"/tables/{table.id}/commits", json=body)
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    return answer


def replaced_partition(api: TestClient, options: dict[str, str]) -> tuple[PaimonTable, Path, dict[str, Any]]:
    """A table whose snapshot 1 holds one file in dt=a; returns the table, that file, and an overwrite of
    the whole table with one file in dt=b, whose commit makes expiration delete the dt=a file."""
    table = create_table(
        api, "post", f"t_{uuid.uuid4().hex[:6]}", FIELDS, partitionKeys=["dt"], options=options
    )
    old_row = {"dt": "a", "id": 1}
    old = table.append_file([old_row])
    commit(
        api, table, {"commitUser": "w", "identifier": 1, "messages": [table.message(old_row, newFiles=[old])]}
    )
    new_row = {"dt": "b", "id": 2}
    new = table.append_file([new_row])
    overwrite = {
        "commitUser": "w",
        "identifier": 2,
        "overwrite": {"mode": "table"},
        "messages": [table.message(new_row, newFiles=[new])],
    }
    return table, table.path / "dt=a" / "bucket-0" / old["fileName"], overwrite


def test_expiration_failing_to_delete_after_a_commit_leaves_its_201(
    api: TestClient, warehouse: Path, caplog: pytest.LogCaptureFixture
) -> None:
    services = services_of(api)
    table, old_file, overwrite = replaced_partition(api, KEEP_ONE)
    assert old_file.exists()
    before = failures(services, "retention")

    with undeletable(old_file.parent):
        # Retention (sync, the default) runs before the answer and fails to delete the dt=a file.
        answer = commit(api, table, overwrite)

    assert [s["id"] for s in answer["snapshots"]] == [2]
    assert failures(services, "retention") == before + 1
    assert old_file.exists(), "the deletion was meant to fail"
    [logged] = [r for r in caplog.records if "after a commit failed" in r.getMessage()]
    assert logged.levelno == logging.ERROR
    assert logged.exc_info is not None
    assert logged.exc_info[0] is PermissionError
    # The commit stands: its snapshot is the head, readable, and readers see its rows only.
    assert api.get(f"/tables/{table.id}/snapshots/latest").json()["id"] == 2
    assert api.get(f"/tables/{table.id}/snapshots/2").status_code == 200
    assert sorted_rows(pypaimon_rows(warehouse, table.id)) == [{"dt": "b", "id": 2}]
    outcome = api.get(f"/tables/{table.id}/commits/w/2").json()
    assert outcome["status"] == "committed"
    # Expiration did not record a half-done run: snapshot 1 is still there to expire next time.
    assert api.get(f"/tables/{table.id}/snapshots/1").status_code == 200


def test_expiration_failing_on_the_background_thread_is_counted(api: TestClient, warehouse: Path) -> None:
    services = services_of(api)
    table, old_file, overwrite = replaced_partition(
        api, {**KEEP_ONE, "snapshot.expire.execution-mode": "async"}
    )
    before = failures(services, "retention")

    with undeletable(old_file.parent):
        answer = commit(api, table, overwrite)
        deadline = time.monotonic() + 30
        while failures(services, "retention") == before and time.monotonic() < deadline:
            time.sleep(0.05)

    assert [s["id"] for s in answer["snapshots"]] == [2]
    assert failures(services, "retention") == before + 1
    assert old_file.exists()
    assert sorted_rows(pypaimon_rows(warehouse, table.id)) == [{"dt": "b", "id": 2}]


def test_a_raising_after_commit_hook_is_logged_and_counted_not_answered(
    api: TestClient, warehouse: Path, caplog: pytest.LogCaptureFixture
) -> None:
    services = services_of(api)
    table = create_table(api, "post", f"h_{uuid.uuid4().hex[:6]}", FIELDS, partitionKeys=["dt"])
    seen: list[tuple[str, int]] = []

    def failing_retention(table_id: str, latest: int) -> None:
        seen.append((table_id, latest))
        raise OSError("storage went away under retention")

    services.committer.after_each_commit(failing_retention)
    before = failures(services, "retention")
    row = {"dt": "a", "id": 7}
    body = append_commit(table, [row], user="w", identifier=1)

    answer = commit(api, table, body)

    assert seen == [(table.id, 1)]
    assert [s["id"] for s in answer["snapshots"]] == [1]
    assert failures(services, "retention") == before + 1
    [logged] = [r for r in caplog.records if r.name == "coordinator.commit.pipeline" and r.exc_info]
    assert "retention after a commit to" in logged.getMessage()
    assert sorted_rows(pypaimon_rows(warehouse, table.id)) == [row]
