"""Three streaming jobs on one primary-key table, and a dedicated compaction job (issue 33, item 4).

Paimon's way for several writers of one primary-key table: the writers are `write-only` (they add
level-0 files and never compact, so they never delete a file another one reads), and one compaction job
compacts. Each writer has its own commit user and its own key range; the compaction runs twice as
Paimon's `sys.compact` procedure (Maven Central here serves no `paimon-flink-action`) while they write.
No job may fail on a conflict, the compaction's commits must land, and pypaimon must read every key of
every range with its latest value.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx

from coordinator.commit.snapshot_acceptance import MANIFEST_MERGE_USER
from tests.flink.jobs import FlinkJob, catalog_sql, checkpointing, history, table_rows
from tests.support.served import LiveServer
from tests.support.waiting import wait_for

WRITERS = 3
ROWS = 400
RATE = 40
KEYS = 20


def writer(url: str, n: int, tmp_path: Path) -> FlinkJob:
    return FlinkJob(
        {
            "mode": "streaming",
            "config": checkpointing(tmp_path / f"checkpoints-{n}"),
            "statements": [
                catalog_sql(url),
                "CREATE TEMPORARY TABLE src (seq BIGINT) WITH ('connector'='datagen', "
                f"'rows-per-second'='{RATE}', 'fields.seq.kind'='sequence', 'fields.seq.start'='1', "
                f"'fields.seq.end'='{ROWS}')",
            ],
            "inserts": [
                "INSERT INTO lake.many.t /*+ OPTIONS('write-only'='true') */ "
                f"SELECT CAST({n * 1000} + seq % {KEYS} AS INT), seq FROM src"
            ],
        },
        tmp_path / f"writer-{n}.log",
    )


def compaction(url: str, log: Path) -> FlinkJob:
    return FlinkJob(
        {
            "mode": "batch",
            # Paimon's procedures submit their job and return; dml-sync makes CALL wait for its end.
            "config": {"table.dml-sync": "true"},
            "statements": [
                catalog_sql(url),
                "USE CATALOG lake",
                "CALL sys.compact(`table` => 'many.t', compact_strategy => 'full')",
            ],
        },
        log,
    )


def commits_at_least(url: str, count: int) -> Callable[[], bool]:
    return lambda: len(history(url, "many.t")) >= count


def test_three_writers_and_a_compaction_job_on_one_table(live_server: LiveServer, tmp_path: Path) -> None:
    url = live_server.url
    FlinkJob(
        {
            "mode": "batch",
            "statements": [
                catalog_sql(url),
                "CREATE DATABASE IF NOT EXISTS lake.many",
                "CREATE TABLE lake.many.t (k INT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) "
                "WITH ('bucket'='2')",
            ],
        },
        tmp_path / "create.log",
    ).finished()
    writers = [writer(url, n, tmp_path) for n in range(WRITERS)]
    for round_ in range(2):  # compactions while the writers write
        wait_for(commits_at_least(url, 6 * (round_ + 1)), "the writers' commits", 180, every=0.5)
        compaction(url, tmp_path / f"compaction-{round_}.log").finished()
    for job in writers:
        job.finished()  # none failed on a conflict

    expected = {n * 1000 + seq % KEYS: seq for n in range(WRITERS) for seq in range(1, ROWS + 1)}
    rows = table_rows(url, "many.t")
    assert {r["k"]: r["v"] for r in rows} == expected
    assert len(rows) == len(expected)  # each key once

    commits = history(url, "many.t")
    # The writers race: a proposal whose base moved is refused as retryable (`success: false`), and its
    # writer rebases and proposes again; nothing else was refused.
    refused = [c["conflict"] for c in commits if c["outcome"] != "committed"]
    assert all(c["type"] == "BASE_SNAPSHOT_MOVED" and c["retryable"] for c in refused), refused
    committed = [(c["commitUser"], c["identifier"]) for c in commits if c["outcome"] == "committed"]
    assert len(committed) == len(set(committed))  # each (commit user, checkpoint) committed once
    kinds = [s["commitKind"] for c in commits for s in c["snapshots"]]
    assert "COMPACT" in kinds, kinds  # the compaction's commits landed
    # By snapshot, not by history row: a compaction's row may also list the coordinator's own
    # manifest-merge snapshot (an APPEND of no rows under MANIFEST_MERGE_USER) made with it.
    users = snapshot_users(url, "many.t")
    assert len(users["APPEND"]) == WRITERS, users  # one commit user a writer
    assert users["COMPACT"].isdisjoint(users["APPEND"])  # only the compaction job compacted


def snapshot_users(url: str, table: str) -> dict[str, set[str]]:
    """The commit users of the table's snapshots by commit kind, the coordinator's own aside."""
    answer = httpx.get(f"{url}/tables/{table}/snapshots", params={"limit": 1000}, timeout=30)
    answer.raise_for_status()
    users: dict[str, set[str]] = {"APPEND": set(), "COMPACT": set()}
    for snapshot in answer.json()["snapshots"]:
        if snapshot["commitUser"] != MANIFEST_MERGE_USER:
            users.setdefault(snapshot["commitKind"], set()).add(snapshot["commitUser"])
    return users
