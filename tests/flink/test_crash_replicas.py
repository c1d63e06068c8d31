"""Exactly once across a crash of the job and of the coordinator replica holding the table's lock.

Two replicas on PostgreSQL. The job commits through replica A, which stops dead in the middle of a
commit: after the commit point recorded it, before its snapshot file is written (`publish_group`),
holding the table's lock, as a process does the instant it is killed there. The test checks that the
lock is A's, SIGKILLs A and the job, and restarts the job from its latest retained checkpoint through
replica B. B takes the table over once A's lease runs out and rolls A's recorded commit forward; the
restarted job meanwhile commits its restored checkpoint again if it cannot see it yet, which B answers
from the record (a resend) instead of committing it twice. pypaimon judges the tables as in
test_crash.py.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.flink.jobs import (
    END_OF_INPUT,
    FlinkJob,
    completed_checkpoints,
    history,
    latest_by_key,
    log_problems,
    table_rows,
)
from tests.flink.test_crash import ROWS, committed_checkpoints, ordered, streaming_job
from tests.support.served import ServedCoordinator, emptied_replicas
from tests.support.waiting import wait_for

LEASE = {"COORDINATOR_LOCK_LEASE_SECONDS": "3"}
"""A short lease, so B takes a table over from the killed A within seconds."""
STOP = "coordinator.commit.publish:Publication.publish_group"
NTH = 7
"""A's seventh publication: two tables commit each checkpoint, so this is the fourth checkpoint's.
The tables are `write-only` (their writers never compact): Paimon sends a checkpoint's compaction as a
second commit, and the stop is meant for the one with the checkpoint's rows."""
SINKS = ("latest", "log")
TABLES = tuple(f"replicas.{sink}" for sink in SINKS)


def metric(url: str, name: str) -> float:
    total = 0.0
    for line in httpx.get(f"{url}/metrics", timeout=30).text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_the_job_and_the_replica_holding_the_lock_killed_mid_commit(
    pg_url: str, warehouse: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "stopped"
    with emptied_replicas(pg_url, warehouse, tmp_path, 1, **LEASE) as (b,):
        a = ServedCoordinator(
            pg_url,
            warehouse,
            tmp_path / "replica-a.log",
            advertise=True,
            stop_at=(STOP, NTH, marker),
            env=LEASE,
        )
        try:
            a.wait_healthy()
            checkpoints = tmp_path / "checkpoints"
            first = replicas_job(a.url, checkpoints, tmp_path / "first.log")
            wait_for(marker.exists, "replica A stopped mid-commit", 180, every=0.2)
            locks = b.http.get("/locks").json()["locks"]
            held = [lock for lock in locks if lock["holderUrl"] == a.url]
            assert held, locks  # the replica about to be killed holds a table's lock
            a.process.kill()
            a.process.wait()
            first.kill()
        finally:
            a.stop()
        stuck_table = held[0]["tableId"]
        before = {table: history(b.url, table) for table in TABLES}
        completed = completed_checkpoints(checkpoints)
        second = replicas_job(b.url, checkpoints, tmp_path / "second.log", completed[max(completed)])
        second.finished()

        model = [{"k": k, "v": v} for k, v in latest_by_key(ROWS).items()]
        assert table_rows(b.url, "replicas.latest") == ordered(model)
        log = [r["seq"] for r in table_rows(b.url, "replicas.log")]
        assert log_problems(log, ROWS) == {"doubled": [], "missing": [], "foreign": []}
        for table in TABLES:
            identifiers = committed_checkpoints(b.url, table)
            assert identifiers == sorted(set(identifiers)), (table, identifiers)  # none twice
            assert identifiers[-1] == END_OF_INPUT, (table, identifiers)
            assert len({c["commitUser"] for c in history(b.url, table)}) == 1, table
            first_run = [c["identifier"] for c in before[table] if c["outcome"] == "committed"]
            assert set(first_run) <= set(completed), (table, first_run, sorted(completed))
        # A recorded the restored checkpoint's commit of the stuck table at its commit point and died
        # before publishing it; the restarted job could not see it and sent it again, and B answered
        # that from the record: a resend, not a second commit.
        assert before[stuck_table][-1]["identifier"] == max(completed), before[stuck_table]
        assert metric(b.url, "coordinator_dedup_hits_total") >= 1


def replicas_job(url: str, checkpoints: Path, log: Path, restore: Path | None = None) -> FlinkJob:
    return streaming_job(url, checkpoints, log, restore, "replicas", SINKS, **{"write-only": "true"})
