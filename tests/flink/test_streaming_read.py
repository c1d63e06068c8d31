"""A Flink job reading a table's changelog from the coordinator's catalog while a streaming job writes it
(issue 33, item 5).

The reader is a streaming SELECT with a consumer id (`consumer-id`), from the first snapshot on, into
Flink's `print` sink, whose lines land in the reader's log; it checkpoints twice a second, and each
checkpoint saves its position as Paimon's consumer file. The table keeps few snapshots
(`snapshot.num-retained.max` 3, `snapshot.time-retained` 1 s), so expiration runs all along: it must
keep every snapshot the consumer has not read yet. The writer's input is the sequence 1..N into a
primary-key table with changelog producer `input`, so the changelog is the input: the reader must have
seen `+I[seq % KEYS, seq]` for every seq, each exactly once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from tests.flink.jobs import KEYS, FlinkJob, catalog_sql, checkpointing, streaming_inserts
from tests.support.served import LiveServer
from tests.support.waiting import wait_for

ROWS = 300
RATE = 50
SEEN = re.compile(r"seen> ([+-][IUD])\[(-?\d+), (-?\d+)\]")


def test_a_consumer_reads_every_change_once_while_expiration_runs(
    live_server: LiveServer, tmp_path: Path
) -> None:
    url = live_server.url
    FlinkJob(
        {
            "mode": "batch",
            "statements": [
                catalog_sql(url),
                "CREATE DATABASE IF NOT EXISTS lake.feed",
                "CREATE TABLE lake.feed.latest (k INT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ("
                "'bucket'='2', 'changelog-producer'='input', 'snapshot.num-retained.min'='1', "
                "'snapshot.num-retained.max'='3', 'snapshot.time-retained'='1 s', "
                # Paimon refuses a consumer id on a table without it: an abandoned consumer would
                # keep its snapshots for ever.
                "'consumer.expiration-time'='1 h')",
            ],
            # A first snapshot for the reader to start from: its consumer file is written once it read one.
            "inserts": ["INSERT INTO lake.feed.latest VALUES (999, 0)"],
        },
        tmp_path / "create.log",
    ).finished()
    table = httpx.get(f"{url}/v1/paimon/databases/feed/tables/latest", timeout=30).json()
    folder = Path(table["path"].removeprefix("file://"))

    reader = FlinkJob(
        {
            "mode": "streaming",
            "config": {
                **checkpointing(tmp_path / "reader-checkpoints"),
                "execution.checkpointing.interval": "500ms",
            },
            "statements": [
                catalog_sql(url),
                "CREATE TEMPORARY TABLE seen (k INT, v BIGINT) "
                "WITH ('connector'='print', 'print-identifier'='seen')",
            ],
            "inserts": [
                "INSERT INTO seen SELECT k, v FROM lake.feed.latest /*+ OPTIONS('consumer-id'='reader', "
                "'scan.mode'='from-snapshot', 'scan.snapshot-id'='1') */"
            ],
        },
        tmp_path / "reader.log",
    )
    # Once the consumer's file exists, expiration keeps every snapshot from its next one on.
    consumer = folder / "consumer" / "consumer-reader"
    wait_for(lambda: running(reader) and consumer.exists(), "the reader's consumer file", 120, every=0.2)

    source, inserts = streaming_inserts("feed", ROWS, RATE, ("latest",))
    FlinkJob(
        {
            "mode": "streaming",
            "config": checkpointing(tmp_path / "writer-checkpoints"),
            "statements": [catalog_sql(url), *source],
            "inserts": inserts,
        },
        tmp_path / "writer.log",
    ).finished()

    def changes() -> list[tuple[str, int, int]]:
        return [(kind, int(k), int(v)) for kind, k, v in SEEN.findall(reader.log.read_text(errors="replace"))]

    wait_for(
        lambda: running(reader) and len(changes()) > ROWS, "the reader to see every change", 120, every=0.5
    )
    seen = changes()
    reader.kill()
    # The batch's row, then every seq of the stream, each once (an extra line would be a change seen twice).
    expected = [("+I", 999, 0)] + [("+I", seq % KEYS, seq) for seq in range(1, ROWS + 1)]
    assert sorted(seen, key=lambda c: c[2]) == expected

    # Expiration ran meanwhile (snapshot 1 is gone), and never took a snapshot the consumer had not read:
    # the earliest left is at most the consumer's next one (which only moves forward). The reader finds
    # new snapshots every 10 s (Paimon's default discovery interval) while the table keeps three, so it
    # read snapshots that were kept for it.
    snapshots = sorted(int(p.name.split("-")[1]) for p in (folder / "snapshot").glob("snapshot-*"))
    next_snapshot = json.loads(consumer.read_text())["nextSnapshot"]
    assert snapshots, "no snapshot left"
    assert 1 < snapshots[0] <= next_snapshot, (snapshots, next_snapshot)


def running(job: FlinkJob) -> bool:
    """True while the job runs; fails with its log once it ended (a streaming read never ends by itself)."""
    assert job.process.poll() is None, job.tail()
    return True
