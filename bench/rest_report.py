"""The printed figures of bench/rest_commits.py: per store, each REST side beside the filesystem side.

Ratios: filesystem / REST for latencies, REST / filesystem for rates, so above 1 favours the REST
catalog. Lost and failed commits are counts, shown beside and never folded into a rate.
"""

from __future__ import annotations

import statistics
from typing import Any

from bench.catalog_load import FILESYSTEM, REST
from bench.report import Row, _phases, grid, render
from bench.suite import busy_warning, revision_text

STORE_NAMES = {"local": "local disk", "s3": "S3 (SeaweedFS on loopback)"}


def summary_rows(store: dict[str, Any], rest: str) -> list[Row]:
    """The issue's figures for one REST side: Row.coordinator is the REST value, Row.pypaimon the
    filesystem one."""
    lat = store["latency"]
    ours, theirs = lat[rest], lat[FILESYSTEM]
    rows: list[Row] = []
    for name in ("fresh", "after"):
        first, last = ours["windows"][name]["commits"]
        if name == "after" and first == 1:
            continue  # one window covers the whole sequence: nothing "after" to show
        label = "fresh" if name == "fresh" else f"after {first - 1:,}"
        for stat in ("p50", "p99"):
            rows.append(
                Row(
                    f"1-file commit {stat}, commits {first}-{last} ({label})",
                    ours["windows"][name]["commit_ms"].get(stat, float("nan")),
                    theirs["windows"][name]["commit_ms"].get(stat, float("nan")),
                    "ms",
                    True,
                )
            )
    rows.append(
        Row(
            f"1-file commits that raised (of {lat['commits']})",
            ours["failed"],
            theirs["failed"],
            "commits",
            True,
        )
    )
    mine, base = store["contention"][rest], store["contention"][FILESYSTEM]
    runs = len(mine)
    shape = f"{mine[0]['writers']} writers x {mine[0]['commits_per_writer']}"
    over = f"median of {runs} runs" if runs > 1 else "1 run"
    total = f"sum of {runs} runs" if runs > 1 else "1 run"

    def median(side: list[dict[str, Any]], key: str) -> float:
        return float(statistics.median(r[key] for r in side))

    def summed(side: list[dict[str, Any]], key: str) -> float:
        return float(sum(r[key] for r in side))

    rows += [
        Row(f"{shape}: acknowledged commits/s ({over})", median(mine, "ok_per_s"), median(base, "ok_per_s"),
            "commits/s", False),
        Row(f"{shape}: durable commits/s ({over})", median(mine, "durable_per_s"),
            median(base, "durable_per_s"), "commits/s", False),
        Row(f"{shape}: lost commits ({total})", summed(mine, "lost"), summed(base, "lost"), "commits", True,
            "0", lambda v: v == 0),
        Row(f"{shape}: failed, gave up after commit.max-retries ({total})", summed(mine, "failed_gave_up"),
            summed(base, "failed_gave_up"), "commits", True),
        Row(f"{shape}: failed, raised otherwise ({total})", summed(mine, "failed_other"),
            summed(base, "failed_other"), "commits", True),
    ]  # fmt: skip
    return rows


def contention_table(store: dict[str, Any]) -> str:
    """One line per side and run: what the writers were told, and what the table holds."""
    header = (
        "side", "run", "acknowledged", "failed: gave up / other", "LOST", "in no snapshot file",
        "rows read / expected", "duplicate rows", "snapshot files", "ids dense", "retries (max in one)",
        "wall s", "ack/s", "durable/s", "commit() p50 / p90 ms", "coordinator: committed / rejected",
    )  # fmt: skip
    lines: list[tuple[str, ...]] = []
    for side in store["sides"]:
        for r in store["contention"][side]:
            v = r["verify"]
            lines.append(
                (
                    side, str(r["run"]), str(r["ok"]), f"{r['failed_gave_up']} / {r['failed_other']}",
                    str(r["lost"]),
                    str(v["not_in_a_snapshot_file"]), f"{v['rows_read']} / {v['rows_expected']}",
                    str(v["duplicate_rows"]), str(v["snapshot_files"]),
                    "yes" if v["snapshot_ids_contiguous"] else "NO",
                    f"{r['retries']} ({r['max_retries_one_commit']})", f"{r['wall_s']:.1f}",
                    f"{r['ok_per_s']:.2f}", f"{r['durable_per_s']:.2f}",
                    f"{r['commit_ms'].get('p50', 0):.0f} / {r['commit_ms'].get('p90', 0):.0f}",
                    _outcomes(r),
                )
            )  # fmt: skip
    return grid(header, lines)


def latency_notes(store: dict[str, Any]) -> str:
    """Per side: the untimed write, the commit over the whole sequence, retries and the read-back."""
    lat = store["latency"]
    lines = [f"1-file commits, {lat['commits']} per side (ms; the clock is around commit() alone):"]
    for side in store["sides"]:
        s = lat[side]
        first, second = s["windows"]["fresh"]["commit_ms"], s["windows"]["after"]["commit_ms"]
        lines.append(
            f"  {side}: write_arrow + prepare_commit p50 {s['write_ms'].get('p50', 0):.1f}; commit() p50 "
            f"{s['commit_ms'].get('p50', 0):.1f}, p99 {s['commit_ms'].get('p99', 0):.1f} over all "
            f"(fresh p50 {first.get('p50', 0):.1f}, after p50 {second.get('p50', 0):.1f}); in it, p50s: "
            f"{_steps(store['kinds'][side], s['step_p50_ms'], s['commit_ms'].get('p50', 0))}; retries "
            f"{s['retries']}; raised {s['failed']}; read back {s['rows_read']} rows, "
            f"{s['rows_missing']} missing, {s['duplicate_rows']} duplicated"
        )
        if "service" in s:
            lines.append(f"    the coordinator: {_service(s['service'], s['step_p50_ms']['publish'])}")
        lines += [f"    raised: {_failure(f)}" for f in s["failure_samples"]]
    for side in store["sides"]:
        for r in store["contention"][side]:
            lines += [
                f"  contention run {r['run']}, {side}, raised: {_failure(f)}" for f in r["failure_samples"]
            ]
    return "\n".join(lines)


STEP_NAMES = {
    REST: {"head": "GET .../snapshot", "publish": "POST .../commit"},
    FILESYSTEM: {"head": "reading LATEST + snapshot-N", "publish": "check + rename onto snapshot-N"},
}


def _steps(kind: str, p50s: dict[str, float], commit_p50: float) -> str:
    """The two timed steps of commit() and what is left: pypaimon's manifests, lists and checks."""
    names = STEP_NAMES[kind]
    parts = [f"{names[step]} {ms:.1f}" for step, ms in p50s.items()]
    return ", ".join([*parts, f"the rest ~{commit_p50 - sum(p50s.values()):.1f}"])


def _failure(failure: dict[str, Any]) -> str:
    """pypaimon's exception and the one it was raised from, shortened."""
    error: str = failure["error"]
    cause: str = failure.get("cause", "None")
    return error[:200] + ("" if cause == "None" else f" (from {cause[:200]})")


def _service(service: dict[str, Any], post_p50: float) -> str:
    """The coordinator's record: its phases of the published commits, and what is outside them."""
    phases = service["phase_median_ms"]
    outside = post_p50 - phases.get("total", 0.0)
    return f"{_phases(phases)}; POST p50 - total ~{outside:.1f} (HTTP, JSON, reading the proposal)"


def _outcomes(run: dict[str, Any]) -> str:
    """The coordinator's answers to the POSTs of a REST run, as its history records them."""
    if "service" not in run:
        return "—"
    outcomes = dict(run["service"]["outcomes"])
    shown = [f"{outcomes.pop('committed', 0)} / {outcomes.pop('rejected', 0)}"]
    shown += [f"{n} {outcome}" for outcome, n in sorted(outcomes.items())]  # none expected
    return ", ".join(shown) + (" (newest only)" if run["service"]["truncated"] else "")


def report(results: dict[str, Any]) -> str:
    """All stores of the run; one summary table per store and REST side."""
    env = results["environment"]
    parts = [
        f"pypaimon {env['versions']['pypaimon']} on both sides, measured in this run; {env['cpus']} CPUs. "
        "ratio: filesystem / REST for latencies, REST / filesystem for rates (above 1 favours REST).",
        *busy_warning(results),
        "",
    ]
    for name, store in results["stores"].items():
        revisions = ", ".join(f"{db} {revision_text(rev)}" for db, rev in store["revisions"].items())
        parts.append(f"== {STORE_NAMES[name]}; coordinator at {revisions}")
        for side in store["sides"]:
            if side == FILESYSTEM:
                continue
            title = f"pypaimon through the coordinator's REST catalog ({side}) vs its own filesystem commit"
            parts += [render(title, summary_rows(store, side), (side, FILESYSTEM)), ""]
        parts += [
            "contention: writer processes released together into one table per side",
            contention_table(store),
            "",
            latency_notes(store),
            "",
        ]
    return "\n".join(parts)
