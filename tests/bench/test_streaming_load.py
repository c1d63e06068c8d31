"""The streaming benchmark's plan and readings (bench/streaming_load.py): every commit sent once, each table
its share round robin, each sender's identifiers in order; round trips read from /metrics or n/a."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.streaming_load import Counters, Load, loads, plan, ratio, round_trip_delta, round_trips


@pytest.mark.parametrize(
    ("tables", "commits", "senders"), [(100, 3000, 32), (1000, 3000, 32), (1, 3000, 32), (1, 7, 1)]
)
def test_the_plan_sends_every_commit_once_round_robin(tables: int, commits: int, senders: int) -> None:
    work = plan(Load("l", tables, commits, senders))
    assert len(work) == senders
    sent = [i for commits_of_sender in work for i, _ in commits_of_sender]
    assert sorted(sent) == list(range(1, commits + 1))
    assert all(t == (i - 1) % tables for commits_of_sender in work for i, t in commits_of_sender)
    per_table = Counter(t for commits_of_sender in work for _, t in commits_of_sender)
    assert max(per_table.values()) - min(per_table.values()) <= 1
    # A sender's identifiers are its positions: they grow with the commit numbers, as a job's checkpoints do.
    assert all([i for i, _ in s] == sorted(i for i, _ in s) for s in work)
    assert max(len(s) for s in work) - min(len(s) for s in work) <= 1


def test_a_sender_reaches_each_of_its_tables_in_turn() -> None:
    work = plan(Load("spread", 100, 3000, 32))
    tables_of_first = [t for _, t in work[0]]
    assert tables_of_first[:4] == [0, 32, 64, 96]
    assert len(set(tables_of_first)) == 25  # gcd(32, 100) = 4: each sender serves a quarter of the tables


def test_the_loads_are_the_issues() -> None:
    planned = loads(3000, 32, 200)
    assert [(load.name, load.tables, load.commits, load.senders, load.history) for load in planned] == [
        ("sequential", 1, 200, 1, 0),
        ("history", 1, 200, 1, 50_000),
        ("spread-100", 100, 3000, 32, 0),
        ("spread-1000", 1000, 3000, 32, 0),
        ("one-table", 1, 3000, 32, 0),
    ]
    assert planned[2].label == "3,000 commits, 32 senders, 100 tables"
    assert planned[0].label == "200 commits, 1 sender, 1 table"
    assert planned[1].label == "200 commits, 1 sender, 1 table with 50,000 commits of history"
    assert [load.name for load in loads(3000, 32, 200, history=0)] == [
        "sequential", "spread-100", "spread-1000", "one-table"
    ]  # fmt: skip


METRICS = """\
# HELP coordinator_db_round_trips_total Round trips to the database by engine.
# TYPE coordinator_db_round_trips_total counter
coordinator_db_round_trips_total{engine="durable"} 1234.0
coordinator_db_round_trips_total{engine="bookkeeping"} 56.0
# HELP coordinator_db_round_trips_created Round trips to the database by engine.
coordinator_db_round_trips_created{engine="durable"} 1.7e+09
coordinator_commits_total{kind="APPEND",outcome="committed"} 3.0
"""


def test_round_trips_come_from_the_counter_per_engine() -> None:
    assert round_trips(METRICS) == {"durable": 1234.0, "bookkeeping": 56.0}


def test_a_revision_without_the_counter_has_none() -> None:
    assert round_trips('coordinator_commits_total{kind="APPEND",outcome="committed"} 3.0\n') is None
    assert round_trip_delta(None, None) is None
    assert round_trip_delta({"durable": 1.0}, None) is None


def test_round_trips_between_two_readings() -> None:
    before = {"durable": 100.0}
    after = {"durable": 160.0, "probes": 30.0}  # an engine's first round trip after the first reading
    assert round_trip_delta(before, after) == {"durable": 60.0, "probes": 30.0}


def test_the_ratio_is_work_tree_over_baseline_or_missing() -> None:
    assert ratio(300.0, 100.0) == 3.0
    assert ratio(6.0, None) is None
    assert ratio(None, 14.0) is None
    assert ratio(1.0, 0.0) is None


def test_what_a_side_spent_between_two_readings() -> None:
    before = Counters({"durable": 10.0}, service_cpu_s=1.5, postgres_cpu_s=4.0, postgres_sessions=12)
    after = Counters({"durable": 70.0}, service_cpu_s=2.0, postgres_cpu_s=4.25, postgres_sessions=30)
    assert after.since(before) == Counters({"durable": 60.0}, 0.5, 0.25, 18)
    on_sqlite = Counters(None, 2.0, None).since(Counters(None, 1.0, None))
    assert on_sqlite == Counters(None, 1.0, None)
