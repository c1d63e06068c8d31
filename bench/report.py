"""The printed tables: coordinator beside pypaimon, with the issue's targets, and where the time goes."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.data import Counts


@dataclass(frozen=True)
class Row:
    """One metric: both values, how to form the ratio, and the target the coordinator must meet."""

    metric: str
    coordinator: float
    pypaimon: float
    unit: str
    lower_is_better: bool
    target: str = "—"
    meets: Callable[[float], bool] | None = None
    floor: float | None = None
    """The physical floor of the same work on this machine (bench/floor.py), in the same unit."""

    @property
    def ratio(self) -> float | None:
        """pypaimon/coordinator for times, coordinator/pypaimon for rates: above 1 favours the coordinator."""
        if self.lower_is_better:
            return self.pypaimon / self.coordinator if self.coordinator else None
        return self.coordinator / self.pypaimon if self.pypaimon else None

    @property
    def floor_ratio(self) -> float | None:
        """coordinator/floor: how many times the floor the coordinator takes (1.0 is the floor itself)."""
        return self.coordinator / self.floor if self.floor else None

    def as_json(self) -> dict[str, Any]:
        met = None if self.meets is None else self.meets(self.coordinator)
        return {
            "metric": self.metric,
            "coordinator": self.coordinator,
            "pypaimon": self.pypaimon,
            "unit": self.unit,
            "ratio": self.ratio,
            "floor": self.floor,
            "floor_ratio": self.floor_ratio,
            "target": self.target,
            "met": met,
        }


def contention_summary(runs: list[dict[str, Any]]) -> tuple[float, int]:
    """Median commits/s over the runs and the total of lost commits."""
    return statistics.median(r["commits_per_s"] for r in runs), sum(r["verify"]["lost"] for r in runs)


def rows_for(coordinator: dict[str, Any], pypaimon: dict[str, Any], counts: Counts) -> list[Row]:
    """The metrics of one database, with issue 18's targets (set for PostgreSQL): each a ratio to
    pypaimon's commit measured in this run, and for the 1-file latencies a bound in floors too."""
    cs, ps = coordinator["sequential"]["windows"], pypaimon["sequential"]["windows"]
    floor = coordinator["floor"]
    rows: list[Row] = []
    for name, label in (("fresh", "fresh"), ("after", f"after {counts.sequential_commits:,}")):
        first, last = cs[name]["commits"]
        p50, p99 = cs[name]["commit_ms"]["p50"], cs[name]["commit_ms"]["p99"]
        theirs = ps[name]["commit_ms"]
        metric = f"1-file commit {{}}, commits {first}-{last} ({label})"
        rows.append(
            Row(
                metric.format("p50"),
                p50,
                theirs["p50"],
                "ms",
                True,
                ">= 1.0x, <= 2x floor",
                _at_most(theirs["p50"], 1.0, floor["one_file_ms"]),
                floor["one_file_ms"],
            )
        )
        rows.append(Row(metric.format("p99"), p99, theirs["p99"], "ms", True))
    big = coordinator["big_commit"]
    rows.append(
        Row(
            f"one commit of {big['files']:,} messages",
            big["seconds"],
            pypaimon["big_commit"]["seconds"],
            "s",
            True,
            ">= 2.0x",
            _at_most(pypaimon["big_commit"]["seconds"], 2.0),
            floor["big_commit_ms"] / 1000,
        )
    )
    return rows + contention_rows(coordinator["contention"], pypaimon["contention"], counts, 10.0)


def contention_rows(
    ours: list[dict[str, Any]], theirs: list[dict[str, Any]], counts: Counts, times: float, prefix: str = ""
) -> list[Row]:
    """commits/s (target: `times` theirs) and lost commits (target 0) of contention runs, side by side."""
    rate, lost = contention_summary(ours)
    their_rate, their_lost = contention_summary(theirs)
    runs = f"{len(ours)} run{'s' * (len(ours) > 1)}"
    shape = f"{prefix}{counts.writers} writers x {counts.commits_per_writer}"
    return [
        Row(
            f"{shape}: commits/s (median of {runs})",
            rate,
            their_rate,
            "commits/s",
            False,
            f">= {times:g}x",
            lambda v: v >= times * their_rate,
        ),
        Row(
            f"{shape}: lost commits (sum of {runs})", lost, their_lost, "commits", True, "0", lambda v: v == 0
        ),
    ]


def _at_most(theirs: float, times: float, floor: float | None = None) -> Callable[[float], bool]:
    """A latency target: at least `times` faster than theirs and, with a `floor`, within 2 floors."""
    return lambda v: theirs / v >= times and (floor is None or v <= 2 * floor)


def _number(value: float, unit: str) -> str:
    if unit == "commits":
        return f"{value:.0f}"
    if unit == "s":
        return f"{value:.3f} s"
    if unit == "commits/s":
        return f"{value:.1f}/s"
    return f"{value:.2f} ms"


def render(title: str, rows: list[Row], sides: tuple[str, str] = ("coordinator", "pypaimon")) -> str:
    """A fixed-width table: metric | coordinator | pypaimon | ratio | target (`sides` names the two value
    columns: Row.coordinator's, then Row.pypaimon's), with floor | x floor before the target when a row
    has a floor."""
    floors = any(row.floor is not None for row in rows)
    header = ("metric", *sides, "ratio", *(("floor", "x floor") if floors else ()), "target")
    lines: list[tuple[str, ...]] = []
    for row in rows:
        ratio = "—" if row.ratio is None or row.unit == "commits" else f"{row.ratio:.2f}x"
        verdict = "" if row.meets is None else ("  met" if row.meets(row.coordinator) else "  MISSED")
        floor = (
            ("—", "—")
            if row.floor is None or row.floor_ratio is None
            else (_number(row.floor, row.unit), f"{row.floor_ratio:.2f}x")
        )
        lines.append(
            (
                row.metric,
                _number(row.coordinator, row.unit),
                _number(row.pypaimon, row.unit),
                ratio,
                *(floor if floors else ()),
                row.target + verdict,
            )
        )
    return f"{title}\n{grid(header, lines)}"


def grid(header: tuple[str, ...], lines: list[tuple[str, ...]]) -> str:
    """A fixed-width markdown table: the first column left-aligned, the others right-aligned."""
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]

    def fmt(cells: tuple[str, ...]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in pairs) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([fmt(header), rule, *(fmt(line) for line in lines)])


PHASES = ["validate", "lockWait", "reconcile", "conflictCheck", "manifestWrite", "commitPoint", "publish"]


def _phases(phases: dict[str, float]) -> str:
    """The phases in commit order, then `untimed` and `total`.

    `untimed` is total minus the phases: what no phase covers, such as the lock release after publish.
    Over a window the values are medians, so `untimed` is approximate.
    """
    known = [p for p in PHASES if p in phases] + sorted(p for p in phases if p not in [*PHASES, "total"])
    parts = [f"{p} {phases[p]:.2f}" for p in known]
    if "total" in phases:
        untimed = phases["total"] - sum(phases[p] for p in known)
        parts += [f"untimed ~{untimed:.2f}", f"total {phases['total']:.2f}"]
    return ", ".join(parts)


def breakdown(coordinator: dict[str, Any]) -> str:
    """Where the coordinator's time goes: the service's phase timings (median ms) beside the client's POST."""
    lines = ["where the time goes (service phase timings, median ms; HTTP = client POST - service total):"]
    for name, w in coordinator["sequential"]["windows"].items():
        phases = w["server_phase_median_ms"]
        http = w["commit_ms"]["p50"] - phases.get("total", 0.0)
        lines.append(
            f"  1-file commits {w['commits'][0]}-{w['commits'][1]} ({name}): POST p50 "
            f"{w['commit_ms']['p50']:.2f}; {_phases(phases)}; HTTP+JSON ~{http:.2f}"
        )
    big = coordinator["big_commit"]
    timings = big["timings_ms"]
    post_ms = big["seconds"] * 1000
    lines.append(
        f"  one commit of {big['files']:,} messages ({big['request_bytes'] / 1e6:.1f} MB body): "
        f"POST {post_ms:.0f}; {_phases(timings)}; outside the service's total "
        f"(HTTP, JSON parse, pydantic) ~{post_ms - timings.get('total', 0.0):.0f}"
    )
    lines += [contention_line("contention", run) for run in coordinator["contention"]]
    return "\n".join(lines)


def contention_line(label: str, run: dict[str, Any]) -> str:
    """One contention run of the coordinator: its pace, the service's phases and the lock's use."""
    v = run["verify"]
    return (
        f"  {label} run {run['run']}: wall {run['wall_s']:.2f} s, {run['commits_per_s']:.1f} commits/s, "
        f"POST p50/p99 {run['commit_ms']['p50']:.1f}/{run['commit_ms']['p99']:.1f}, write p50 "
        f"{run['write_ms']['p50']:.1f}; {_phases(run['server_phase_median_ms'])}; lock held p50 "
        f"{run['lock_held_ms']['p50']:.1f} ms, lock busy {run['lock_busy_fraction']:.0%} of the wall, "
        f"mean group {run['group_size_mean']:.1f} commits; "
        f"resends {run['resends']}; lost {v['lost']}; rows {v['rows_read']}/{v['rows_expected']}"
    )


def floor_lines(floor: dict[str, Any]) -> str:
    """The floor's parts (p50 ms, bench/floor.py) and what they add up to."""
    request, files = floor["request_ms"], floor["files_ms"]
    transaction = floor["transaction_ms"]
    psycopg = transaction.get("psycopg")
    alone = f" (psycopg alone {psycopg['p50']:.2f})" if psycopg else ""
    return "\n".join(
        [
            f"the floor (p50 ms over {request['n']} each; same server, same database, local files):",
            f"  request: body-less POST /tables/{{id}}/ping, keep-alive: {request['p50']:.2f}",
            f"  transaction: UPDATE head if unmoved + INSERT commit row, SQLAlchemy engine: "
            f"{transaction['sqlalchemy']['p50']:.2f}{alone}",
            f"  files: manifest of 1 entry, base and delta manifest lists, snapshot, LATEST: "
            f"{files['one_entry']['p50']:.2f} -> 1-file commit floor {floor['one_file_ms']:.2f}",
            f"  files with a manifest of {floor['big_entries']:,} entries (p50 of {files['big']['n']}): "
            f"{files['big']['p50']:.1f} -> {floor['big_entries']:,}-message commit floor "
            f"{floor['big_commit_ms']:.1f}",
        ]
    )


def replica_rows(replicas: dict[str, Any], counts: Counts) -> list[Row]:
    """This checkout's replicas beside the baseline revision's, same load; issue 18's target."""
    shape = f"{replicas['replicas']} replicas x "
    return contention_rows(replicas["ours"], replicas["baseline"], counts, 1.5, shape)


def replica_report(replicas: dict[str, Any], counts: Counts) -> str:
    """The replica case's table, then its runs one by one."""
    baseline = f"baseline {replicas['baseline_revision'][:7]}"
    rows = replica_rows(replicas, counts)
    title = (
        f"{replicas['replicas']} replicas on one PostgreSQL database, one table: this checkout vs {baseline}"
    )
    lines = [
        contention_line(f"{side} contention", run) for side in ("ours", "baseline") for run in replicas[side]
    ]
    return "\n".join([render(title, rows, ("this checkout", baseline)), "", *lines])


def pypaimon_notes(pypaimon: dict[str, Any]) -> str:
    """The baseline's contention details: retries, failures and lost commits per run."""
    lines = ["pypaimon contention runs:"]
    for run in pypaimon["contention"]:
        v = run["verify"]
        lines.append(
            f"  run {run['run']}: wall {run['wall_s']:.2f} s, {run['commits_per_s']:.1f} commits/s, "
            f"retries {run['retries']} (max {run['max_retries_one_commit']} in one commit), failed "
            f"{run['failed_commits']}, lost {v['lost']}, rows {v['rows_read']}/{v['rows_expected']}"
        )
    return "\n".join(lines)
