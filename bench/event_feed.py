"""The commit event feed (issue 34): how soon a consumer of GET /events sees an acknowledged commit, and
what writing the outbox costs a commit.

usage: python bench/run.py --events [--databases postgres,sqlite] [--commits 400] [--senders 4]
                           [--sequential 200] [--baseline 06facb9]

On each database two `coordinator serve` subprocesses run side by side, each on a fresh database and
warehouse: this work tree's (with the outbox) and a baseline revision's (main before issue 34: without it),
as bench/streaming_load.py runs them.

- `sequential`: one sender per side, `--sequential` 1-file commits in turn on both sides (who goes first
  changes every commit): the 1-file commit p50 and p99 with and without the outbox in the same minutes.
- `feed`: on the work tree's side, `--senders` concurrent senders commit `--commits` 1-file commits over
  as many tables while one consumer long-polls GET /events (`wait=5`) from the cursor before the load.
  Per commit: the time from the sender's acknowledgement (its 201 read) to the consumer's receipt of the
  commit's event, both on this process's monotonic clock. Every acknowledged commit's event must arrive
  exactly once, or the run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
import traceback
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from bench.coordinator_bench import new_client
from bench.procs import exit_on_sigterm, progress
from bench.replicas import check_source, checkout, resolve
from bench.service import REPO
from bench.stats import summarize
from bench.streaming_load import SETTLE_S, Load, Side, prepare, run_load, side
from bench.suite import environment, revision, save

DATABASES = ("postgres", "sqlite")
DEFAULT_BASELINE = "06facb9"
"""main before issue 34's outbox."""
COMMITS = 400
SENDERS = 4
SEQUENTIAL = 200
WAIT_S = 5


class Consumer(threading.Thread):
    """Long-polls GET /events from `after`; notes when each commit's event arrived."""

    def __init__(self, url: str, after: int, expected: int) -> None:
        super().__init__(daemon=True)
        self.url, self.after, self.expected = url, after, expected
        self.seen: dict[tuple[str, int], list[float]] = {}
        self.error: str | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            with httpx.Client(base_url=self.url, timeout=WAIT_S + 30) as http:
                count = 0
                while count < self.expected and not self.stop.is_set():
                    params: dict[str, str | int] = {"after": self.after, "wait": WAIT_S, "kind": "commit"}
                    answer = http.get("/events", params=params)
                    answer.raise_for_status()
                    page = answer.json()
                    now = time.perf_counter()
                    for event in page["events"]:
                        key = (event["commitUser"], event["commitIdentifier"])
                        self.seen.setdefault(key, []).append(now)
                        count += 1
                    self.after = page["nextCursor"]
        except Exception:
            self.error = traceback.format_exc()


def feed_latency(work_tree: Side, senders: int, commits: int) -> dict[str, Any]:
    """`commits` 1-file commits by `senders` senders over `senders` tables, one consumer of the feed."""
    load = Load("feed", senders, commits, senders)
    prepared = prepare(work_tree, load)
    time.sleep(SETTLE_S)
    url = work_tree.service.url
    start = httpx.get(f"{url}/events", params={"limit": 1000, "after": 0}, timeout=30).json()["nextCursor"]
    while True:  # the cursor after the prepared tables' own events
        page = httpx.get(f"{url}/events", params={"limit": 1000, "after": start}, timeout=30).json()
        if not page["events"]:
            break
        start = page["nextCursor"]
    consumer = Consumer(url, start, commits)
    consumer.start()
    acknowledged: dict[tuple[str, int], float] = {}
    failed: list[str] = []
    lock = threading.Lock()

    def send(s: int) -> None:
        with new_client(url) as client:
            for identifier, (_, t, body) in enumerate(prepared.work[s], 1):
                answer = client.post(
                    f"/tables/{prepared.tables[t].id}/commits",
                    content=body,
                    headers={"Content-Type": "application/json"},
                )
                now = time.perf_counter()
                with lock:
                    if answer.status_code == 201:
                        acknowledged[(prepared.users[s], identifier)] = now
                    else:
                        failed.append(f"{answer.status_code} {answer.text[:200]}")

    threads = [threading.Thread(target=send, args=(s,)) for s in range(senders)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    consumer.join(60)
    consumer.stop.set()
    if consumer.error:
        raise RuntimeError(f"the consumer failed:\n{consumer.error}")
    missing = [k for k in acknowledged if k not in consumer.seen]
    doubled = [k for k, times in consumer.seen.items() if len(times) > 1]
    latencies = [(consumer.seen[k][0] - at) * 1000 for k, at in acknowledged.items() if k in consumer.seen]
    return {
        "commits": commits,
        "senders": senders,
        "acknowledged": len(acknowledged),
        "failed": failed,
        "missing": len(missing),
        "doubled": len(doubled),
        "unacknowledged_events": len(set(consumer.seen) - set(acknowledged)),
        "commits_per_s": len(acknowledged) / wall if wall else None,
        "ack_to_consumer_ms": summarize(latencies),
        "ok": not failed and not missing and not doubled,
    }


def run_database(
    database: str, root: Path, baseline: tuple[str, Path], sequential: int, senders: int, commits: int
) -> dict[str, Any]:
    started = time.perf_counter()
    ours = revision()
    with ExitStack() as stack:
        sides = [
            stack.enter_context(side("work tree", ours["commit"], REPO, database, root / "work-tree")),
            stack.enter_context(side("baseline", baseline[0][:7], baseline[1], database, root / "baseline")),
        ]
        turns = run_load(sides, Load("sequential", 1, sequential, 1))
        progress(f"  work tree: feed: {commits} commits by {senders} senders, one consumer")
        feed = feed_latency(sides[0], senders, commits)
        latency = feed["ack_to_consumer_ms"]
        progress(
            f"  feed: acknowledgement to consumer p50 {latency.get('p50', 0):.1f} ms, p99 "
            f"{latency.get('p99', 0):.1f} ms; {feed['missing']} missing, {feed['doubled']} doubled"
        )
    return {
        "database": database,
        "revision": ours,
        "baseline_revision": baseline[0],
        "sequential": {
            name: {"commit_ms": r["commit_ms"], "round_trips_per_commit": r.get("round_trips_per_commit")}
            for name, r in turns.items()
        },
        "feed": feed,
        "elapsed_s": time.perf_counter() - started,
    }


def report(results: dict[str, Any]) -> str:
    lines = [
        "| database | 1-file commit p50 / p99, with the outbox | without (baseline) | feed: ack to consumer "
        "p50 / p99 | commits/s during it | missing / doubled |",
        "|---|---|---|---|---|---|",
    ]
    for database, result in results["databases"].items():
        if "error" in result:
            lines.append(f"| {database} | failed | | | | |")
            continue
        ours, base = (result["sequential"][n]["commit_ms"] for n in ("work tree", "baseline"))
        feed = result["feed"]
        latency = feed["ack_to_consumer_ms"]
        lines.append(
            f"| {database} | {ours['p50']:.2f} / {ours['p99']:.2f} ms "
            f"| {base['p50']:.2f} / {base['p99']:.2f} ms "
            f"| {latency['p50']:.1f} / {latency['p99']:.1f} ms | {feed['commits_per_s']:.1f} "
            f"| {feed['missing']} / {feed['doubled']} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(prog="bench/run.py --events", description=__doc__.splitlines()[0])
    parser.add_argument("--databases", default="postgres", help="comma-separated: postgres, sqlite")
    parser.add_argument("--commits", type=int, default=COMMITS, help=f"commits of the feed load ({COMMITS})")
    parser.add_argument("--senders", type=int, default=SENDERS, help=f"senders of the feed load ({SENDERS})")
    parser.add_argument(
        "--sequential", type=int, default=SEQUENTIAL, help=f"1-file commits in turn ({SEQUENTIAL})"
    )
    parser.add_argument(
        "--baseline", default=DEFAULT_BASELINE, metavar="REV", help="the side without the outbox"
    )
    args = parser.parse_args(argv)
    databases = [d.strip() for d in args.databases.split(",") if d.strip()]
    if not databases or set(databases) - set(DATABASES):
        parser.error(f"--databases: choose from {', '.join(DATABASES)}")
    if min(args.commits, args.senders, args.sequential) < 1:
        parser.error("--commits, --senders and --sequential: at least 1")
    baseline = resolve(args.baseline)
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": ["bench/run.py", "--events", *argv],
        "environment": environment(),
        "baseline": baseline,
        "load_average_start": os.getloadavg(),
        "databases": {},
    }
    with tempfile.TemporaryDirectory(prefix="coordinator-events-") as tmp:
        source = checkout(baseline, Path(tmp) / "baseline-source")
        check_source(source)
        for database in databases:
            try:
                results["databases"][database] = run_database(
                    database,
                    Path(tmp) / database,
                    (baseline, source),
                    args.sequential,
                    args.senders,
                    args.commits,
                )
            except Exception:
                results["databases"][database] = {"error": traceback.format_exc()}
                progress(f"{database} FAILED")
    text = report(results)
    print(text)
    progress(f"results: {save(results, 'event-feed-')}")
    ok = all("error" not in r and r["feed"]["ok"] for r in results["databases"].values())
    print(json.dumps({"ok": ok}))
    return 0 if ok else 1
