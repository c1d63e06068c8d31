"""Exactly once across a crash: a streaming job SIGKILLed mid-stream, restarted from its latest retained
checkpoint, run to the end of its bounded input.

Paimon's Flink sink keeps its commit user in the job's state and commits each checkpoint under the
checkpoint's id; a restored job first commits what its checkpoint holds, unless the table already has
a snapshot of that user and identifier. So what may have landed before the crash must not land twice,
and what had not landed must land once. pypaimon is the judge: the primary-key tables hold every key
once with its latest value, the append-only log holds 1..N each once (a checkpoint committed twice
doubles its rows there, one lost leaves a gap).

The kill is aimed: the test holds the answer to a commit of the log table after it stands (recorded,
snapshot published) and kills the job while it waits for that answer, so the job dies not knowing its
commit landed.

It can fail: the last test replays the same input from the start under a new commit user (a restart
without the checkpoint), and the same judge reports exactly the rows committed before the kill doubled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.flink.jobs import (
    END_OF_INPUT,
    SINKS,
    FlinkJob,
    catalog_sql,
    checkpointing,
    completed_checkpoints,
    history,
    latest_by_key,
    log_problems,
    streaming_inserts,
    streaming_tables,
    table_rows,
)
from tests.support.held_answer import HeldAnswer
from tests.support.served import LiveServer
from tests.support.waiting import wait_for

ROWS = 900
RATE = 60  # rows a second: fifteen seconds of input, so the kill lands mid-stream
TABLES = ("crash.latest", "crash.looked", "crash.log")


def streaming_job(
    url: str,
    checkpoints: Path,
    log: Path,
    restore: Path | None = None,
    database: str = "crash",
    sinks: tuple[str, ...] = SINKS,
    **options: str,
) -> FlinkJob:
    source, inserts = streaming_inserts(database, ROWS, RATE, sinks)
    return FlinkJob(
        {
            "mode": "streaming",
            "config": checkpointing(checkpoints, restore),
            "statements": [catalog_sql(url), *streaming_tables(database, sinks, **options), *source],
            "inserts": inserts,
        },
        log,
    )


def committed_checkpoints(url: str, table: str) -> list[int]:
    return [c["identifier"] for c in history(url, table) if c["outcome"] == "committed"]


def kill_while_a_commit_waits_for_its_answer(live_server: LiveServer, job: FlinkJob) -> int:
    """Lets three checkpoints commit, then holds the answer of the log table's next commit after it
    stands and kills the job meanwhile; returns that commit's identifier."""
    url = live_server.url
    wait_for(lambda: len(committed_checkpoints(url, "crash.log")) >= 3, "three checkpoints committed", 120)
    with HeldAnswer(live_server.services, "crash.log") as held:
        assert held.reached.wait(60), job.tail()
        job.kill()
    landed: int = committed_checkpoints(url, "crash.log")[-1]
    return landed


def dedup_hits(url: str) -> float:
    """coordinator_dedup_hits_total: commits answered from the record as resends."""
    for line in httpx.get(f"{url}/metrics", timeout=30).text.splitlines():
        if line.startswith("coordinator_dedup_hits_total "):
            return float(line.split()[1])
    return 0.0


def test_a_killed_job_restarted_from_its_checkpoint_commits_each_checkpoint_once(
    live_server: LiveServer, tmp_path: Path
) -> None:
    url, checkpoints = live_server.url, tmp_path / "checkpoints"
    first = streaming_job(url, checkpoints, tmp_path / "first.log")
    landed = kill_while_a_commit_waits_for_its_answer(live_server, first)
    before = {table: history(url, table) for table in TABLES}
    completed = completed_checkpoints(checkpoints)
    restored = max(completed)
    assert landed in completed  # Paimon commits a checkpoint only once it completed
    assert restored == landed  # the held commit kept the next checkpoint from completing
    hits_before = dedup_hits(url)

    second = streaming_job(url, checkpoints, tmp_path / "second.log", restore=completed[restored])
    second.finished()

    model = [{"k": k, "v": v} for k, v in latest_by_key(ROWS).items()]
    assert table_rows(url, "crash.latest") == ordered(model)
    assert table_rows(url, "crash.looked") == ordered(model)
    log = [r["seq"] for r in table_rows(url, "crash.log")]
    assert log_problems(log, ROWS) == {"doubled": [], "missing": [], "foreign": []}

    for table in TABLES:
        commits = history(url, table)
        judge_history(table, commits, before[table], completed)
    # The commit that stood while the job died is there once, and the restarted job went on from it.
    assert committed_checkpoints(url, "crash.log").count(landed) == 1
    # The commit that stood was published before the kill: the restored job found it among the
    # snapshots (its commit user, the checkpoint id) and did not send it again, so the coordinator had
    # no resend to answer. test_crash_replicas.py kills a replica between the commit point and the
    # publication: there the restored job cannot see its commit, sends it again, and gets the record.
    assert dedup_hits(url) == hits_before


def judge_history(
    table: str, commits: list[dict[str, Any]], before: list[dict[str, Any]], completed: dict[int, Path]
) -> None:
    """One commit per completed checkpoint, under one commit user (the restored job keeps the first
    one's), the end of the input last; those before the kill for checkpoints that completed."""
    assert {c["outcome"] for c in commits} == {"committed"}, (table, commits)
    users = {c["commitUser"] for c in commits}
    assert len(users) == 1, (table, users)
    identifiers = [c["identifier"] for c in commits]
    assert identifiers == sorted(set(identifiers)), (table, identifiers)  # none twice, in order
    assert identifiers[-1] == END_OF_INPUT, (table, identifiers)
    first_run = [c["identifier"] for c in before]
    assert set(first_run) <= set(completed), (table, first_run, sorted(completed))
    assert identifiers[: len(first_run)] == first_run, (table, identifiers, first_run)
    assert len(identifiers) > len(first_run) + 1, (table, identifiers)  # the restarted job committed too


def test_replaying_the_input_under_a_new_commit_user_is_reported_as_doubled_rows(
    live_server: LiveServer, tmp_path: Path
) -> None:
    """The judge above can fail: a restart that does not restore the checkpoint reads the input again
    from its start under a new commit user, so nothing tells the coordinator (or Paimon) that its first
    checkpoints were committed already, and every row committed before the kill is there twice."""
    url, checkpoints = live_server.url, tmp_path / "checkpoints"
    first = streaming_job(url, checkpoints, tmp_path / "first.log")
    kill_while_a_commit_waits_for_its_answer(live_server, first)
    committed_before = [r["seq"] for r in table_rows(url, "crash.log")]
    assert committed_before  # the kill came after commits

    replay = streaming_job(url, tmp_path / "other-checkpoints", tmp_path / "replay.log")
    replay.finished()

    problems = log_problems([r["seq"] for r in table_rows(url, "crash.log")], ROWS)
    assert problems == {"doubled": sorted(committed_before), "missing": [], "foreign": []}
    users = {c["commitUser"] for c in history(url, "crash.log")}
    assert len(users) == 2  # what made it possible: the replay committed as somebody else


def ordered(rows: list[dict[str, int]]) -> list[dict[str, int]]:
    """In read_rows' order."""
    return sorted(rows, key=lambda r: tuple(str(v) for v in r.values()))
