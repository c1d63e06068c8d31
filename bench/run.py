"""Benchmark the commit coordinator against pypaimon's own filesystem commit, measured in the same run.

usage: python bench/run.py [--quick] [--databases sqlite,postgres]
       python bench/run.py --s3 [--commits 100] [--writers 8] [--per-writer 20] [--database sqlite|postgres]
       python bench/run.py --rest [--s3 | --stores local,s3] [--databases sqlite,postgres] [--quick] [...]
       python bench/run.py --spark [--rows 5000000] [--repeats 5]
       python bench/run.py --transactions [--pairs 200] [--databases sqlite,postgres]
       python bench/run.py --streaming [--databases postgres,sqlite] [--commits 3000] [--baseline REV]
       python bench/run.py --events [--databases postgres,sqlite] [--commits 400] [--baseline REV]
       python bench/run.py --flink [--rate 5000] [--seconds 40] [--writers 3] [--writer-rate 1000]

Prints one table per database (metric | coordinator | pypaimon | ratio | target) and writes every raw
number to bench/results/<timestamp>.json. With `--s3`, instead, the S3 benchmark of bench/s3_commits.py
(its own options follow). With `--rest`, pypaimon through the coordinator's Paimon REST catalog beside
pypaimon's own filesystem commit, on local disk and on S3 (bench/rest_commits.py). With `--spark`,
only the Spark benchmark of the paimon-coordinator data source (bench/spark_datasource.py: its writes
and reads beside plain Spark's). With `--transactions`, a 2-table transaction beside the same two
commits made in turn (bench/transactions.py). With `--streaming`, many streaming jobs committing at once
(one table, 100 and 1,000 tables) on this work tree beside a baseline revision, with the floor of a commit
(bench/streaming_load.py). With `--events`, the commit event feed: acknowledgement to consumer, and the
1-file commit with and without the outbox (bench/event_feed.py). With `--flink`, Flink streaming jobs
through the coordinator's REST catalog beside Paimon's filesystem catalog (bench/flink_streaming.py).
What is measured and how to read it: bench/README.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def importable() -> None:
    """Let `python bench/run.py` find bench/ and, without an install, the three distributions.

    Spawned children (writers, the pypaimon baseline) inherit this sys.path from the parent. The other
    scripts of bench/ run on their own call it too, once they have put the repository root on sys.path.
    """
    for path in (REPO / "service", REPO / "client", REPO / "format", REPO):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))


def main() -> int:
    importable()
    argv = sys.argv[1:]
    if "--streaming" in argv:
        from bench.streaming_load import main as run_streaming

        return run_streaming([a for a in argv if a != "--streaming"])
    if "--flink" in argv:
        from bench.flink_streaming import main as run_flink

        return run_flink([a for a in argv if a != "--flink"])
    if "--events" in argv:
        from bench.event_feed import main as run_events

        return run_events([a for a in argv if a != "--events"])
    if "--transactions" in argv:
        from bench.transactions import main as run_transactions

        return run_transactions([a for a in argv if a != "--transactions"])
    if "--spark" in argv:
        from bench.spark_datasource import main as run_spark

        return run_spark([a for a in argv if a != "--spark"])
    if "--rest" in argv:
        # Before --s3: with --rest, --s3 picks the REST benchmark's store.
        from bench.rest_commits import main as run_rest

        return run_rest([a for a in argv if a != "--rest"])
    if "--s3" in argv:
        # The S3 benchmark has options of its own; the suite's parser would refuse them.
        from bench.s3_commits import main as run_s3

        return run_s3([a for a in argv if a != "--s3"])
    from bench.suite import main as run_suite

    return run_suite()


if __name__ == "__main__":
    sys.exit(main())
