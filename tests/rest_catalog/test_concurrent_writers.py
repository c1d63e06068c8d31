"""Four pypaimon REST writer processes commit to one table at once, on a local warehouse and on S3:
every commit lands once, snapshot ids are dense, and every row is there. (The same load committing
through pypaimon's own filesystem catalog loses commits on S3: `bench/rest_commits.py` measures it.)"""

from __future__ import annotations

import httpx
import pytest

from coordinator.commit.snapshot_acceptance import REBASE_APPENDS
from paimon_format.snapshot import Snapshot
from tests.support import rest_writer_process
from tests.support.paimon_files import read_text
from tests.support.rest_writer_process import SCHEMA
from tests.support.rest_writers import create_rest_table, read_rows, rest_catalog
from tests.support.served import LiveServer

STORES = ("local", "s3")
WRITERS = 4
COMMITS = 20


@pytest.mark.slow  # writer processes that each start pypaimon
@pytest.mark.parametrize("rebase_appends", [False, True], ids=["told", "rebased"])
def test_four_rest_writer_processes_lose_nothing(live_server: LiveServer, rebase_appends: bool) -> None:
    """Told: every writer whose base moved hears `success: false` and retries. Rebased (the table's
    `coordinator.rebase-appends`): the coordinator puts such appends on top itself, and nobody retries."""
    catalog = rest_catalog(live_server.url)
    options = {REBASE_APPENDS: "true"} if rebase_appends else {}
    table = create_rest_table(catalog, "db.shared", SCHEMA, options=options)
    writers = [rest_writer_process.start(live_server.url, "db.shared", w, COMMITS) for w in range(WRITERS)]
    for writer in writers:
        out, err = writer.communicate(timeout=600)
        assert writer.returncode == 0, err[-3000:]
        assert out.strip() == str(COMMITS)

    rows = read_rows(table)
    assert sorted(r["id"] for r in rows) == sorted(
        w * 1000 + i for w in range(WRITERS) for i in range(COMMITS)
    )
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        latest = http.get("/tables/db.shared").json()["latestSnapshotId"]
        location = http.get("/tables/db.shared").json()["location"]
        commits = http.get("/tables/db.shared/commits", params={"limit": 1000}).json()["commits"]
    snapshots = [
        Snapshot.from_json(read_text(f"{location}/snapshot/snapshot-{i}")) for i in range(1, latest + 1)
    ]
    assert [s.id for s in snapshots] == list(range(1, latest + 1))  # dense: every id is on storage
    data = [s for s in snapshots if s.delta_record_count > 0]
    assert len(data) == WRITERS * COMMITS
    assert len({(s.commit_user, s.commit_identifier) for s in data}) == WRITERS * COMMITS
    committed = [c for c in commits if c["outcome"] == "committed"]
    assert len(committed) == WRITERS * COMMITS
    if rebase_appends:
        assert [c for c in commits if c["outcome"] == "rejected"] == []
