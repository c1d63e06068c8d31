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

    @property
    def ratio(self) -> float | None:
        """pypaimon/coordinator for times, coordinator/pypaimon for rates: above 1 favours the coordinator."""
        if self.lower_is_better:
            return self.pypaimon / self.coordinator if self.coordinator else None
        return self.coordinator / self.pypaimon if self.pypaimon else None

    def as_json(self) -> dict[str, Any]:
        met = None if self.meets is None else self.meets(self.coordinator)
        return {
            "metric": self.metric,
            "coordinator": self.coordinator,
            "pypaimon": self.pypaimon,
            "unit": self.unit,
            "ratio": self.ratio,
            "target": self.target,
            "met": met,
        }


def contention_summary(runs: list[dict[str, Any]]) -> tuple[float, int]:
    """Median commits/s over the runs and the total of lost commits."""
    return statistics.median(r["commits_per_s"] for r in runs), sum(r["verify"]["lost"] for r in runs)


def rows_for(coordinator: dict[str, Any], pypaimon: dict[str, Any], counts: Counts) -> list[Row]:
    """The metrics of one database; targets are the issue's (set for PostgreSQL)."""
    cs, ps = coordinator["sequential"]["windows"], pypaimon["sequential"]["windows"]
    rows: list[Row] = []
    for name, label in (("fresh", "fresh"), ("after", f"after {counts.sequential_commits:,}")):
        first, last = cs[name]["commits"]
        for stat in ("p50", "p99"):
            p50 = stat == "p50"
            rows.append(
                Row(
                    f"1-file commit {stat}, commits {first}-{last} ({label})",
                    cs[name]["commit_ms"][stat],
                    ps[name]["commit_ms"][stat],
                    "ms",
                    True,
                    "<= 10 ms" if p50 else "—",
                    (lambda v: v <= 10.0) if p50 else None,
                )
            )
    files = coordinator["big_commit"]["files"]
    rows.append(
        Row(
            f"one commit of {files:,} messages",
            coordinator["big_commit"]["seconds"],
            pypaimon["big_commit"]["seconds"],
            "s",
            True,
            "< 2 s",
            lambda v: v < 2.0,
        )
    )
    c_rate, c_lost = contention_summary(coordinator["contention"])
    p_rate, p_lost = contention_summary(pypaimon["contention"])
    runs = len(coordinator["contention"])
    shape = f"{counts.writers} writers x {counts.commits_per_writer}"
    rows.append(
        Row(
            f"{shape}: commits/s (median of {runs} run{'s' * (runs > 1)})",
            c_rate,
            p_rate,
            "commits/s",
            False,
            ">= 100/s",
            lambda v: v >= 100.0,
        )
    )
    rows.append(
        Row(
            f"{shape}: lost commits (sum of {runs} run{'s' * (runs > 1)})",
            c_lost,
            p_lost,
            "commits",
            True,
            "0",
            lambda v: v == 0,
        )
    )
    return rows


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
    columns: Row.coordinator's, then Row.pypaimon's)."""
    header = ("metric", *sides, "ratio", "target")
    lines: list[tuple[str, ...]] = []
    for row in rows:
        ratio = "—" if row.ratio is None or row.unit == "commits" else f"{row.ratio:.2f}x"
        verdict = "" if row.meets is None else ("  met" if row.meets(row.coordinator) else "  MISSED")
        lines.append(
            (
                row.metric,
                _number(row.coordinator, row.unit),
                _number(row.pypaimon, row.unit),
                ratio,
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
    for run in coordinator["contention"]:
        v = run["verify"]
        lines.append(
            f"  contention run {run['run']}: wall {run['wall_s']:.2f} s, POST p50/p99 "
            f"{run['commit_ms']['p50']:.1f}/{run['commit_ms']['p99']:.1f}, write p50 "
            f"{run['write_ms']['p50']:.1f}; {_phases(run['server_phase_median_ms'])}; lock held p50 "
            f"{run['lock_held_ms']['p50']:.1f} ms, lock busy {run['lock_busy_fraction']:.0%} of the wall, "
            f"mean group {run['group_size_mean']:.1f} commits; "
            f"resends {run['resends']}; rows {v['rows_read']}/{v['rows_expected']}"
        )
    return "\n".join(lines)


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
