"""Catalog-wide capacity (issue 32): many streaming jobs committing at once to one coordinator.

usage: python bench/run.py --streaming [--databases postgres,sqlite] [--commits 3000] [--baseline cf0dd7d]
                           [--senders 32] [--sequential 200] [--spread 100,1000] [--history 50000]
                           [--workers N]

On each database two `coordinator serve` subprocesses run side by side, each on a fresh database and
warehouse: this work tree's and a baseline revision's (`git archive`, as for the replica case). Each
gets the same loads, the sides taking turns at going first:

- `sequential`: one sender, one table, `--sequential` commits one after the other: the 1-file commit
  p50, compared with the floor of a commit measured in the same run (bench/floor.py). Here the two
  sides' commits alternate in one loop (who goes first changes every commit), as in the suite's
  sequential case, so that both see the same minutes of a shared machine;
- `history`: the same on a table that has `--history` commits of another writer in its history already
  (rows written straight into each side's database, then ANALYZE): a streaming job's table after weeks of
  checkpoints. Its p50 beside the fresh table's says whether a commit's cost grows with the history;
- `spread-100`, `spread-1000`, `one-table`: `--commits` commits by `--senders` concurrent senders,
  round robin over 100 tables, over 1,000 tables (`--spread`), and all to one table.

A sender is a thread with its own keep-alive httpx client, its own commitUser and increasing identifiers,
as a streaming job commits one checkpoint after another; every commit adds one real 10-row parquet file
written before the clock starts, and every table has had one untimed commit before (a streaming job's
table is not new). Per load and side: commits/s, the client's p50 and p99, the service's CPU per commit
(/proc/<pid>/stat; with `--workers N`, the work tree's service runs N workers and its CPU is the parent's
and every worker's), database round trips per commit (`coordinator_db_round_trips_total` on GET /metrics;
n/a for a revision without it) and the senders' own CPU. Afterwards pypaimon reads every table back:
every acknowledged commit's rows exactly once, or the run fails.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
from sqlalchemy import Engine, create_engine, text

from bench import floor
from bench.coordinator_bench import commit_body, commit_with_retry, create_table, new_client
from bench.cpu import postmaster_pid, process_tree_cpu_seconds, server_cpu_seconds
from bench.data import ROWS_PER_FILE, partition_of, rows
from bench.procs import exit_on_sigterm, progress
from bench.replicas import check_source, checkout, resolve
from bench.service import REPO, CoordinatorProcess, postgres_database, sqlite_url
from bench.stats import median_phases, summarize
from bench.suite import environment, revision, save
from bench.table_files import AppendTable
from bench.verify import verify_contention

DATABASES = ("postgres", "sqlite")
DEFAULT_BASELINE = "cf0dd7d"
"""main before issue 32's work: the revision its targets are set against."""
SENDERS = 32
COMMITS = 3_000
SEQUENTIAL = 200
SPREAD = (100, 1000)
HISTORY = 50_000
"""Commits already in the history table of the `history` load: five weeks of a job checkpointing each
minute."""
PREPARE_WORKERS = 8
"""Threads that create the tables, send their untimed first commits and write the data files."""
SETTLE_S = 1.0
"""A pause before each timed load, so the work left by the one before (the other side's, or this side's
first commits) is not inside its window."""
READY_TIMEOUT_S = 120.0
SESSIONS = text("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
ROUND_TRIPS = re.compile(r'^coordinator_db_round_trips_total\{engine="([^"]*)"\} (\S+)$', re.MULTILINE)

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Load:
    """`commits` commits by `senders` concurrent senders, round robin over `tables` tables."""

    name: str
    tables: int
    commits: int
    senders: int
    history: int = 0
    """Commits of another writer already in each table's history before the load."""

    @property
    def label(self) -> str:
        tables = "1 table" if self.tables == 1 else f"{self.tables:,} tables"
        history = f" with {self.history:,} commits of history" if self.history else ""
        return f"{self.commits:,} commits, {self.senders} sender{'s' * (self.senders > 1)}, {tables}{history}"


def loads(
    commits: int, senders: int, sequential: int, spread: Sequence[int] = SPREAD, history: int = HISTORY
) -> list[Load]:
    """The sequential 1-file commits (on a fresh table, and on one with a long history), then the issue's
    loads: spread over each count of tables, and one table."""
    return [
        Load("sequential", 1, sequential, 1),
        *([Load("history", 1, sequential, 1, history)] if history else []),
        *(Load(f"spread-{n}", n, commits, senders) for n in spread),
        Load("one-table", 1, commits, senders),
    ]


def plan(load: Load) -> list[list[tuple[int, int]]]:
    """Per sender, what it sends in order: (commit number from 1, table index).

    Commit i goes to table (i - 1) mod tables and to sender (i - 1) mod senders, so each table gets its
    share of the commits round robin, and a sender's commits (its identifiers 1, 2, ... in this order)
    go to the tables in turn.
    """
    senders: list[list[tuple[int, int]]] = [[] for _ in range(load.senders)]
    for i in range(1, load.commits + 1):
        senders[(i - 1) % load.senders].append((i, (i - 1) % load.tables))
    return senders


def round_trips(metrics: str) -> dict[str, float] | None:
    """coordinator_db_round_trips_total per engine from a /metrics text; None when the series is absent."""
    found = {engine: float(value) for engine, value in ROUND_TRIPS.findall(metrics)}
    return found or None


def round_trip_delta(
    before: dict[str, float] | None, after: dict[str, float] | None
) -> dict[str, float] | None:
    """Round trips per engine made between two readings (an engine first seen after counts from 0)."""
    if before is None or after is None:
        return None
    return {engine: value - before.get(engine, 0.0) for engine, value in after.items()}


def ratio(ours: float | None, baseline: float | None) -> float | None:
    """ours / baseline, or None when either is missing or the baseline is 0."""
    if ours is None or not baseline:
        return None
    return ours / baseline


# ---------------------------------------------------------------- the two services


@dataclass(frozen=True)
class Side:
    """One revision's service on its own database and warehouse."""

    name: str
    revision: str
    service: CoordinatorProcess
    database_url: str
    warehouse: Path
    postmaster: int | None
    """The local PostgreSQL server's pid, for its CPU; None on SQLite, or when it is not on this machine."""
    statistics: Engine | None
    """One session of the side's PostgreSQL database, to read how many sessions it has had; None on
    SQLite."""

    def postgres_sessions(self) -> int | None:
        """Sessions established to the side's database so far (pg_stat_database.sessions, PostgreSQL 14
        on): a closed session is counted at once, a pooled one within a second of its first commit."""
        if self.statistics is None:
            return None
        with self.statistics.connect() as conn:
            return int(conn.execute(SESSIONS).scalar_one())


@contextmanager
def side(
    name: str, revision_id: str, source: Path, database: str, root: Path, workers: int | None = None
) -> Iterator[Side]:
    """`source`'s service on a fresh database and warehouse under `root` (with `--workers` when given);
    stopped (and the PostgreSQL database dropped) on exit."""
    warehouse = root / "warehouse"
    warehouse.mkdir(parents=True)
    with ExitStack() as stack:
        url = sqlite_url(root) if database == "sqlite" else stack.enter_context(postgres_database())
        service = stack.enter_context(
            CoordinatorProcess(url, warehouse, root / "service.log", source, workers=workers)
        )
        postmaster, statistics = None, None
        if database != "sqlite":
            postmaster = postmaster_pid(url)
            statistics = create_engine(url, pool_size=1, max_overflow=0, isolation_level="AUTOCOMMIT")
            stack.callback(statistics.dispose)
        ready = Side(name, revision_id, service, url, warehouse, postmaster, statistics)
        ready.postgres_sessions()  # its own session is counted now, before any reading that matters
        yield ready


def in_threads(fn: Callable[[httpx.Client, T], R], items: Sequence[T], url: str) -> list[R]:
    """fn(client, item) for every item on PREPARE_WORKERS threads, each with its own client; in order."""
    local = threading.local()
    clients: list[httpx.Client] = []
    guard = threading.Lock()

    def one(item: T) -> R:
        client: httpx.Client | None = getattr(local, "client", None)
        if client is None:
            client = local.client = new_client(url)
            with guard:
                clients.append(client)
        return fn(client, item)

    try:
        with ThreadPoolExecutor(PREPARE_WORKERS) as pool:
            return list(pool.map(one, items))
    finally:
        for client in clients:
            client.close()


# ---------------------------------------------------------------- before the clock


@dataclass
class Prepared:
    """A load's tables, each with one commit already, and every sender's serialized commits."""

    tables: list[AppendTable]
    users: list[str]
    work: list[list[tuple[int, int, bytes]]]
    """Per sender: (commit number, table index, body) in sending order."""
    acknowledged: list[dict[tuple[str, int], range]]
    """Per table: (commitUser, identifier) -> row ids of every commit acknowledged so far."""
    claimed: list[dict[tuple[str, int], int]]
    """Per table: (commitUser, identifier) -> the snapshot id the service answered."""


def commit_ids(i: int) -> range:
    """The row ids of commit i of a load; the first commits of the tables follow the load's own."""
    return range(i * ROWS_PER_FILE, (i + 1) * ROWS_PER_FILE)


def prepare(side: Side, load: Load) -> Prepared:
    """Create the load's tables, give each one untimed commit, and write every data file of the load."""
    url = side.service.url

    def first_commit(client: httpx.Client, t: int) -> tuple[AppendTable, int]:
        table, _ = create_table(client, f"{load.name.replace('-', '_')}_t{t:04d}")
        i = load.commits + 1 + t
        batch = rows(partition_of(i), commit_ids(i).start)
        body = commit_body("first-commit", 1, [table.message(batch[0], newFiles=[table.append_file(batch)])])
        answer, _ = commit_with_retry(client, table.id, body)
        return table, answer["snapshots"][0]["id"]

    created = in_threads(first_commit, range(load.tables), url)
    tables = [table for table, _ in created]
    acknowledged = [{("first-commit", 1): commit_ids(load.commits + 1 + t)} for t in range(load.tables)]
    claimed = [{("first-commit", 1): snapshot} for _, snapshot in created]

    def data_file(_: httpx.Client, commit: tuple[int, int]) -> dict[str, Any]:
        i, t = commit
        batch = rows(partition_of(i), commit_ids(i).start)
        return tables[t].message(batch[0], newFiles=[tables[t].append_file(batch)])

    senders = plan(load)
    messages = in_threads(data_file, [c for commits in senders for c in commits], url)
    users = [f"stream-{s}-{uuid.uuid4().hex[:8]}" for s in range(load.senders)]
    work: list[list[tuple[int, int, bytes]]] = []
    k = 0
    for s, commits in enumerate(senders):
        work.append([])
        for identifier, (i, t) in enumerate(commits, 1):
            work[-1].append((i, t, commit_body(users[s], identifier, [messages[k]])))
            k += 1
    return Prepared(tables, users, work, acknowledged, claimed)


# ---------------------------------------------------------------- the clock


class Sender(threading.Thread):
    """One streaming job: its commits in order, each resent (same identifier) until the service decides."""

    def __init__(
        self,
        index: int,
        url: str,
        work: list[tuple[int, int, bytes]],
        tables: Sequence[AppendTable],
        ready: threading.Barrier,
    ) -> None:
        super().__init__(daemon=True)
        self.index, self.url, self.work, self.tables, self.ready = index, url, work, tables, ready
        self.start_signal = threading.Event()
        self.cancelled = False
        """Set with the start signal when the load is abandoned before its release: send nothing."""
        self.records: list[dict[str, Any]] = []
        self.failures: list[dict[str, Any]] = []
        self.finished = 0.0
        self.cpu_s = 0.0
        """This thread's own CPU while it sent its commits."""
        self.error: str | None = None

    def run(self) -> None:
        try:
            with new_client(self.url) as client:
                client.get("/health")  # connect before the start signal
                self.ready.wait(READY_TIMEOUT_S)
                self.start_signal.wait()
                if self.cancelled:
                    return
                cpu = time.thread_time()
                for identifier, (i, t, body) in enumerate(self.work, 1):
                    record = send(client, self.tables[t].id, body, (self.index, identifier, i, t))
                    (self.records if "ms" in record else self.failures).append(record)
                self.cpu_s = time.thread_time() - cpu
            self.finished = time.perf_counter()
        except BaseException:
            self.error = traceback.format_exc()
            self.ready.abort()  # do not leave the others waiting for a sender that will never be ready


def send(
    client: httpx.Client, table_id: str, body: bytes, where: tuple[int, int, int, int]
) -> dict[str, Any]:
    """One commit, timed from its first POST to the decision (resends included); a failure's record has
    no `ms`. `where`: the sender, its identifier, the commit number and the table index."""
    sender, identifier, i, t = where
    at = {"sender": sender, "identifier": identifier, "commit": i, "table": t}
    started = time.perf_counter()
    try:
        answer, resends = commit_with_retry(client, table_id, body)
    except Exception as error:
        return {**at, "error": repr(error)[:500]}
    return {
        **at,
        "ms": (time.perf_counter() - started) * 1000,
        "resends": resends,
        "deduplicated": answer["deduplicated"],
        "snapshot": answer["snapshots"][0]["id"],
        "timings": answer["timings"],
        "group_size": answer.get("groupSize", 1),
    }


def metrics_text(url: str) -> str:
    response = httpx.get(f"{url}/metrics", timeout=30.0)
    response.raise_for_status()
    return response.text


@dataclass(frozen=True)
class Counters:
    """What a side's service has spent so far: round trips per engine (None: the revision has no
    counter), its CPU seconds, the local PostgreSQL server's (None: SQLite, or not on this machine) and
    the sessions established to its PostgreSQL database (None: SQLite)."""

    round_trips: dict[str, float] | None
    service_cpu_s: float
    postgres_cpu_s: float | None
    postgres_sessions: int | None = None

    @staticmethod
    def read(side: Side) -> Counters:
        postgres = None if side.postmaster is None else server_cpu_seconds(side.postmaster)
        return Counters(
            round_trips(metrics_text(side.service.url)),
            process_tree_cpu_seconds(side.service.pid),  # with --workers: the parent and every worker
            postgres,
            side.postgres_sessions(),
        )

    def since(self, before: Counters) -> Counters:
        return Counters(
            round_trip_delta(before.round_trips, self.round_trips),
            self.service_cpu_s - before.service_cpu_s,
            difference(self.postgres_cpu_s, before.postgres_cpu_s),
            difference(self.postgres_sessions, before.postgres_sessions),
        )


N = TypeVar("N", int, float)


def difference(after: N | None, before: N | None) -> N | None:
    """after - before, or None when either reading is missing."""
    return None if after is None or before is None else after - before


def timed(side: Side, load: Load, prepared: Prepared) -> dict[str, Any]:
    """Release every sender at once; the load's figures from the release to the last sender's end."""
    ready = threading.Barrier(load.senders + 1)
    senders = [
        Sender(s, side.service.url, work, prepared.tables, ready) for s, work in enumerate(prepared.work)
    ]
    for sender in senders:
        sender.start()
    try:
        ready.wait(READY_TIMEOUT_S)
    except threading.BrokenBarrierError:
        for sender in senders:
            sender.join(10)
        raise RuntimeError(next((s.error for s in senders if s.error), "a sender was not ready")) from None
    try:
        before = Counters.read(side)
    except BaseException:
        for sender in senders:
            sender.cancelled = True
            sender.start_signal.set()
        raise
    released = time.perf_counter()
    for sender in senders:
        sender.start_signal.set()
    for sender in senders:
        sender.join()
    spent = Counters.read(side).since(before)
    errors = [s.error for s in senders if s.error]
    if errors:
        raise RuntimeError(f"a sender failed:\n{errors[0]}")
    records = [r for s in senders for r in s.records]
    failures = [f for s in senders for f in s.failures]
    wall = max(s.finished for s in senders) - released
    return figures(prepared, records, failures, wall, spent, sum(s.cpu_s for s in senders))


def alternated(sides: Sequence[Side], load: Load, prepared: Sequence[Prepared]) -> list[dict[str, Any]]:
    """One sender per side, their commits in turn (the side going first changes every commit), so that
    both sides see the same minutes of a shared machine. The PostgreSQL server's CPU is read around each
    commit; the rest once per side around the whole loop."""
    if load.senders != 1:
        raise ValueError("commits in turn are for one sender per side")
    records: list[list[dict[str, Any]]] = [[] for _ in sides]
    failures: list[list[dict[str, Any]]] = [[] for _ in sides]
    cpu, postgres = [0.0] * len(sides), [0.0] * len(sides)
    with ExitStack() as stack:
        clients = [stack.enter_context(new_client(s.service.url)) for s in sides]
        for client in clients:
            client.get("/health")
        before = [Counters.read(s) for s in sides]
        for k in range(load.commits):
            for n in range(len(sides)) if k % 2 == 0 else reversed(range(len(sides))):
                i, t, body = prepared[n].work[0][k]
                server = sides[n].postmaster
                started_postgres = None if server is None else server_cpu_seconds(server)
                started_cpu = time.thread_time()
                record = send(clients[n], prepared[n].tables[t].id, body, (0, k + 1, i, t))
                cpu[n] += time.thread_time() - started_cpu
                if server is not None and started_postgres is not None:
                    postgres[n] += server_cpu_seconds(server) - started_postgres
                (records[n] if "ms" in record else failures[n]).append(record)
        spent = [Counters.read(s).since(b) for s, b in zip(sides, before, strict=True)]
    out = []
    for n, side in enumerate(sides):
        counters = Counters(
            spent[n].round_trips,
            spent[n].service_cpu_s,
            None if side.postmaster is None else postgres[n],
            spent[n].postgres_sessions,
        )
        wall = sum(r["ms"] for r in records[n]) / 1000
        out.append(figures(prepared[n], records[n], failures[n], wall, counters, cpu[n]))
    return out


def figures(
    prepared: Prepared,
    records: Sequence[dict[str, Any]],
    failures: Sequence[dict[str, Any]],
    wall: float,
    spent: Counters,
    client_cpu: float,
) -> dict[str, Any]:
    """One run's figures; records the acknowledged commits in `prepared` for the read-back."""
    for r in records:
        pair = (prepared.users[r["sender"]], r["identifier"])
        prepared.acknowledged[r["table"]][pair] = commit_ids(r["commit"])
        prepared.claimed[r["table"]][pair] = r["snapshot"]
    acknowledged = len(records)
    per_commit = max(acknowledged, 1)
    trips, postgres = spent.round_trips, spent.postgres_cpu_s
    return {
        "commits": acknowledged + len(failures),
        "acknowledged": acknowledged,
        "failed": len(failures),
        "failures": list(failures[:5]),
        "wall_s": wall,
        "commits_per_s": acknowledged / wall if wall else 0.0,
        "commit_ms": summarize([r["ms"] for r in records]),
        "resends": sum(r["resends"] for r in records),
        "deduplicated": sum(1 for r in records if r["deduplicated"]),
        "service_cpu_s": spent.service_cpu_s,
        "service_cpu_ms_per_commit": spent.service_cpu_s * 1000 / per_commit,
        "client_cpu_ms_per_commit": client_cpu * 1000 / per_commit,
        "postgres_cpu_s": postgres,
        "postgres_cpu_ms_per_commit": None if postgres is None else postgres * 1000 / per_commit,
        "postgres_sessions": spent.postgres_sessions,
        "postgres_sessions_per_commit": (
            None if spent.postgres_sessions is None else spent.postgres_sessions / per_commit
        ),
        "round_trips": trips,
        "round_trips_per_commit": None if trips is None else sum(trips.values()) / per_commit,
        "group_size_mean": sum(r["group_size"] for r in records) / per_commit,
        "server_phase_median_ms": median_phases([r["timings"] for r in records if r["timings"]]),
        "commit_ms_all": [round(r["ms"], 3) for r in records],
    }


# ---------------------------------------------------------------- after the clock


def verify(side: Side, prepared: Prepared) -> dict[str, Any]:
    """pypaimon reads every table back: each acknowledged commit's rows once, no other rows, every commit
    recorded in exactly one snapshot file, the one the service answered."""
    catalog = {"warehouse": str(side.warehouse)}
    checks = [
        verify_contention(catalog, table.id, table.location, acknowledged, claimed)
        for table, acknowledged, claimed in zip(
            prepared.tables, prepared.acknowledged, prepared.claimed, strict=True
        )
    ]
    keys = (
        "acknowledged",
        "lost",
        "not_in_a_snapshot_file",
        "rows_read",
        "rows_expected",
        "duplicate_rows",
        "commits_in_two_snapshots",
        "wrong_snapshot_claims",
    )
    total = {key: sum(int(c[key]) for c in checks) for key in keys}
    total["tables"] = len(checks)
    total["doubled"] = total["duplicate_rows"] + total["commits_in_two_snapshots"]
    total["ok"] = (
        total["lost"] == 0
        and total["doubled"] == 0
        and total["wrong_snapshot_claims"] == 0
        and total["rows_read"] == total["rows_expected"]
    )
    return total


HISTORY_ROW = text(
    "INSERT INTO commits (table_id, commit_user, identifier, outcome, snapshots, timings, created_at, "
    "action, digest) VALUES (:table, 'history', :identifier, 'committed', '[]', '{}', 0, 'commit', :digest)"
)


def add_history(side: Side, table_id: str, commits: int) -> None:
    """`commits` committed rows of another writer in the table's history, written straight into the side's
    database (a schema both revisions share), and fresh statistics, as a long-lived table has."""
    engine = create_engine(side.database_url)
    try:
        with engine.begin() as conn:
            for start in range(1, commits + 1, 10_000):
                rows = range(start, min(start + 10_000, commits + 1))
                conn.execute(
                    HISTORY_ROW, [{"table": table_id, "identifier": i, "digest": f"{i:064x}"} for i in rows]
                )
        with engine.connect() as conn:
            conn.execute(text("ANALYZE"))
            conn.commit()
    finally:
        engine.dispose()


def run_load(sides: Sequence[Side], load: Load) -> dict[str, dict[str, Any]]:
    """Prepare, settle, measure, verify: one load on each side, the sides in the order given; with one
    sender, the sides' commits in turn instead."""
    prepared, prepare_s = [], []
    results: dict[str, dict[str, Any]] = {}
    for side in sides:
        progress(f"  {side.name}: {load.name}: {load.tables:,} tables and their first commits, files")
        started = time.perf_counter()
        prepared.append(prepare(side, load))
        if load.history:
            add_history(side, prepared[-1].tables[0].id, load.history)
        prepare_s.append(time.perf_counter() - started)
        if load.senders > 1:
            time.sleep(SETTLE_S)
            progress(f"  {side.name}: {load.name}: {load.label}")
            results[side.name] = timed(side, load, prepared[-1])
    if load.senders == 1:
        time.sleep(SETTLE_S)
        progress(f"  {' and '.join(s.name for s in sides)} in turn: {load.name}: {load.label} each")
        results = {s.name: r for s, r in zip(sides, alternated(sides, load, prepared), strict=True)}
    for side, ready, seconds in zip(sides, prepared, prepare_s, strict=True):
        result = results[side.name]
        started = time.perf_counter()
        result["verify"] = verify(side, ready)
        result["verify_s"] = time.perf_counter() - started
        result["prepare_s"] = seconds
        v = result["verify"]
        progress(
            f"  {side.name}: {load.name}: {result['commits_per_s']:.1f} commits/s, p50 "
            f"{result['commit_ms']['p50']:.1f} ms; read back: {v['lost']} lost, {v['doubled']} doubled"
        )
    return results


def run_database(
    database: str,
    root: Path,
    baseline: tuple[str, Path],
    load_list: Sequence[Load],
    workers: int | None = None,
) -> dict[str, Any]:
    """Both services on `database` (the work tree's with `workers`); the floor, then each load on both,
    the sides taking turns going first."""
    started = time.perf_counter()
    ours = revision()
    with ExitStack() as stack:
        sides = [
            stack.enter_context(
                side("work tree", ours["commit"], REPO, database, root / "work-tree", workers)
            ),
            stack.enter_context(side("baseline", baseline[0][:7], baseline[1], database, root / "baseline")),
        ]
        progress(
            f"{database}: the floor of a commit (empty POSTs, the commit point's transaction, its files)"
        )
        measured_floor = floor.one_file(sides[0].service.url, sides[0].database_url, root / "floor")
        runs = {
            load.name: run_load(sides if k % 2 == 0 else sides[::-1], load)
            for k, load in enumerate(load_list)
        }
    return {
        "database": database,
        "revision": ours,
        "baseline_revision": baseline[0],
        "floor": measured_floor,
        "loads": runs,
        "elapsed_s": time.perf_counter() - started,
    }


# ---------------------------------------------------------------- the report


def cells(ours: float | None, base: float | None, digits: int) -> str:
    """`ours | baseline | ratio` cells (n/a where a figure is missing)."""

    def figure(value: float | None) -> str:
        return "n/a" if value is None else f"{value:,.{digits}f}"

    r = ratio(ours, base)
    return f"{figure(ours)} | {figure(base)} | {'n/a' if r is None else f'{r:.2f}x'}"


def load_table(result: dict[str, Any], load_list: Sequence[Load]) -> list[str]:
    """One row per load and metric: work tree, baseline, work tree / baseline."""
    lines = [
        f"| load | metric | work tree {result['revision']['commit']} "
        f"| baseline {result['baseline_revision'][:7]} | work tree / baseline |",
        "|---|---|---:|---:|---:|",
    ]
    metrics: list[tuple[str, Callable[[dict[str, Any]], float | None], int]] = [
        ("commits/s", lambda r: float(r["commits_per_s"]), 1),
        ("p50 ms", lambda r: float(r["commit_ms"]["p50"]), 1),
        ("p99 ms", lambda r: float(r["commit_ms"]["p99"]), 1),
        ("service CPU ms/commit", lambda r: float(r["service_cpu_ms_per_commit"]), 2),
        ("round trips/commit", lambda r: r["round_trips_per_commit"], 1),
        ("PostgreSQL CPU ms/commit (whole server)", lambda r: r["postgres_cpu_ms_per_commit"], 2),
        ("new PostgreSQL sessions/commit", lambda r: r["postgres_sessions_per_commit"], 2),
        ("senders' CPU ms/commit", lambda r: float(r["client_cpu_ms_per_commit"]), 2),
        ("mean group", lambda r: float(r["group_size_mean"]), 2),
    ]
    for load in load_list:
        pair = result["loads"][load.name]
        ours, base = pair["work tree"], pair["baseline"]
        for name, get, digits in metrics:
            lines.append(f"| {load.label} | {name} | {cells(get(ours), get(base), digits)} |")
        lines.append(
            f"| {load.label} | lost / doubled / failed | {correctness(ours)} | {correctness(base)} | |"
        )
    return lines


def correctness(run: dict[str, Any]) -> str:
    v = run["verify"]
    text = f"{v['lost']} / {v['doubled']} / {run['failed']}"
    return text if v["ok"] and not run["failed"] else f"**{text}**"


def target_lines(result: dict[str, Any], load_list: Sequence[Load]) -> list[str]:
    """Issue 32's targets, judged on this run's figures (its spread target on the first spread load)."""
    loads_ = result["loads"]
    spread_load = next(load for load in load_list if load.name.startswith("spread-"))

    def verdict(met: bool) -> str:
        return "met" if met else "MISSED"

    spread, hot, seq = loads_[spread_load.name], loads_["one-table"], loads_["sequential"]
    spread_x = ratio(spread["work tree"]["commits_per_s"], spread["baseline"]["commits_per_s"]) or 0.0
    hot_x = ratio(hot["work tree"]["commits_per_s"], hot["baseline"]["commits_per_s"]) or 0.0
    p99 = spread["work tree"]["commit_ms"]["p99"]
    one_file = result["floor"]["one_file_ms"]
    p50 = {name: seq[name]["commit_ms"]["p50"] for name in ("work tree", "baseline")}
    clean = all(
        run["verify"]["ok"] and not run["failed"] for pair in loads_.values() for run in pair.values()
    )
    return [
        f"- spread over {spread_load.tables:,} tables: {spread_x:.2f}x the baseline's commits/s "
        f"(target >= 3x): {verdict(spread_x >= 3)}; p99 {p99:.0f} ms (target < 300 ms): {verdict(p99 < 300)}",
        f"- one table: {hot_x:.2f}x the baseline's commits/s (target >= 1.5x): {verdict(hot_x >= 1.5)}",
        f"- 1-file commit p50 (1 sender, 1 table): {p50['work tree']:.2f} ms = "
        f"{p50['work tree'] / one_file:.2f}x the floor of {one_file:.2f} ms (target <= 2.5x): "
        f"{verdict(p50['work tree'] <= 2.5 * one_file)}; the baseline's {p50['baseline']:.2f} ms = "
        f"{p50['baseline'] / one_file:.2f}x",
        *history_lines(loads_, load_list),
        f"- every run read back by pypaimon: 0 lost, 0 doubled, 0 failed: {verdict(clean)}",
    ]


def history_lines(loads_: dict[str, Any], load_list: Sequence[Load]) -> list[str]:
    """The 1-file p50 on the table with a long history beside the fresh table's, per side."""
    load = next((load for load in load_list if load.history), None)
    if load is None:
        return []
    grown = {
        name: loads_["history"][name]["commit_ms"]["p50"] / loads_["sequential"][name]["commit_ms"]["p50"]
        for name in ("work tree", "baseline")
    }
    return [
        f"- 1-file commit p50 with {load.history:,} commits of history: {grown['work tree']:.2f}x the fresh "
        f"table's (the baseline's {grown['baseline']:.2f}x)"
    ]


def floor_line(measured: dict[str, Any]) -> str:
    request, transaction = measured["request_ms"], measured["transaction_ms"]
    psycopg = transaction.get("psycopg")
    alone = f" (psycopg alone {psycopg['p50']:.2f})" if psycopg else ""
    return (
        f"floor of a 1-file commit (p50s, bench/floor.py): request {request['p50']:.2f} + transaction "
        f"{transaction['sqlalchemy']['p50']:.2f}{alone} + files "
        f"{measured['files_ms']['one_entry']['p50']:.2f} = {measured['one_file_ms']:.2f} ms"
    )


def report(results: dict[str, Any], load_list: Sequence[Load]) -> str:
    parts = [
        f"issue 32, catalog-wide capacity: work tree beside baseline {results['baseline'][:7]}, same run; "
        f"{results['senders']} sender threads; 1-minute load average {results['load_average_start'][0]:.1f} "
        "at the start. Ratios are work tree / baseline (commits/s: higher is better; the rest: lower).",
        "",
    ]
    for database, result in results["databases"].items():
        if "error" in result:
            parts += [f"## {database}: FAILED", "", result["error"], ""]
            continue
        parts += [f"## {database}", "", *load_table(result, load_list), "", floor_line(result["floor"]), ""]
        parts += [*target_lines(result, load_list), ""]
    return "\n".join(parts)


def passed(results: dict[str, Any]) -> bool:
    """Every database ran, and every run of it read back clean with no failed commit."""
    return all(
        "error" not in result
        and all(
            run["verify"]["ok"] and not run["failed"]
            for pair in result["loads"].values()
            for run in pair.values()
        )
        for result in results["databases"].values()
    )


def main(argv: Sequence[str]) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(prog="bench/run.py --streaming", description=__doc__.splitlines()[0])
    parser.add_argument("--databases", default=",".join(DATABASES), help="comma-separated: postgres, sqlite")
    parser.add_argument(
        "--commits", type=int, default=COMMITS, help=f"commits per load (default {COMMITS:,})"
    )
    parser.add_argument(
        "--senders", type=int, default=SENDERS, help=f"concurrent senders (default {SENDERS})"
    )
    parser.add_argument(
        "--sequential", type=int, default=SEQUENTIAL, help=f"1-file commits in turn (default {SEQUENTIAL})"
    )
    parser.add_argument(
        "--history",
        type=int,
        default=HISTORY,
        help=f"commits in the history of the `history` load's table (default {HISTORY:,}; 0 skips it)",
    )
    parser.add_argument(
        "--baseline",
        default=DEFAULT_BASELINE,
        metavar="REV",
        help=f"the revision beside the work tree (default {DEFAULT_BASELINE}, main before issue 32's work)",
    )
    parser.add_argument(
        "--spread",
        default=",".join(map(str, SPREAD)),
        help="table counts of the spread loads, comma-separated (default 100,1000; targets: the first)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="serve the work tree with `coordinator serve --workers N` (the baseline as it starts)",
    )
    args = parser.parse_args(argv)
    databases = [d.strip() for d in args.databases.split(",") if d.strip()]
    if not databases or set(databases) - set(DATABASES):
        parser.error(f"--databases: choose from {', '.join(DATABASES)}")
    if args.workers is not None and args.workers > 1 and "sqlite" in databases:
        parser.error("--workers above 1 needs PostgreSQL: --databases postgres")
    spread = [int(n) for n in args.spread.split(",") if n.strip()]
    if not spread or min(args.commits, args.senders, args.sequential, *spread) < 1:
        parser.error("--commits, --senders, --sequential and --spread: at least 1")
    if args.history < 0:
        parser.error("--history: at least 0")
    load_list = loads(args.commits, args.senders, args.sequential, spread, args.history)
    baseline = resolve(args.baseline)
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": ["bench/run.py", "--streaming", *argv],
        "environment": environment(),
        "baseline": baseline,
        "senders": args.senders,
        "workers": args.workers,
        "loads": [load.__dict__ for load in load_list],
        "load_average_start": os.getloadavg(),
        "databases": {},
    }
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="coordinator-streaming-") as tmp:
        source = checkout(baseline, Path(tmp) / "baseline-source")
        check_source(source)
        for database in databases:
            try:
                results["databases"][database] = run_database(
                    database, Path(tmp) / database, (baseline, source), load_list, args.workers
                )
            except Exception:
                results["databases"][database] = {"error": traceback.format_exc()}
                progress(f"{database} FAILED")
    results["elapsed_s"] = time.perf_counter() - started
    results["load_average_end"] = os.getloadavg()
    text = report(results, load_list)
    path = save(results, "streaming-")
    print(text)
    ok = passed(results)
    if not ok:
        print("FAILED: a database did not run, or a commit was lost, doubled or failed (see above)")
    print(f"raw numbers: {path}  (total {results['elapsed_s']:.0f} s)")
    return 0 if ok else 1
