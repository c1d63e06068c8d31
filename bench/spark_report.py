"""The Spark data source benchmark's table: medians, ratios to the plain Spark action, targets, and where
each action's time goes (before / during / after its Spark tasks; the coordinator's commit)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from bench.spark_cases import HANDOFF, READS, WRITES, Pair

LABELS = {
    "plain": "df.write.parquet",
    "plain_partitioned": "df.write.partitionBy('dt').parquet",
    "plain_sorted": "sortWithinPartitions(dt, bucket, id), by dt/bucket",
    "plain_shuffled": "repartition(4, dt, id) + sort, by dt",
    HANDOFF: "mapInArrow counting rows (Arrow hand-off)",
    "append": "data source: append table",
    "append_partitioned": "data source: append table by dt",
    "primary_key": "data source: primary key, by dt, 4 buckets",
    "read_append_plain": "spark.read.parquet(its files)",
    "read_append": "data source: append table",
    "read_primary_key_plain": "spark.read.parquet(its files), no merge",
    "read_primary_key": "data source: primary key (merge on read)",
}


def median(result: Mapping[str, Any], name: str, part: str = "total") -> float:
    return float(statistics.median(run[part] for run in result[name] if part in run))


def report(result: Mapping[str, Any]) -> str:
    start, end = result["load_average_start"][0], result["load_average_end"][0]
    lines = [
        f"Spark data source, {result['rows']:,} rows, local[2], median of {result['repeats']} "
        f"(1-min load average {start:.1f} at the start, {end:.1f} at the end)",
        f"{'':55} {'median':>8} {'ratio':>6} {'target':>7}   before / tasks / after tasks"
        "   Spark tasks   service commit",
        "writes",
    ]
    lines += _pairs(result, WRITES)
    handoff = median(result, HANDOFF)
    lines.append(
        f"  {LABELS[HANDOFF]:<53} {handoff:7.2f}s {handoff / median(result, 'plain'):5.2f}x  (of plain)"
    )
    lines += ["full reads (every column to the noop sink)", *_pairs(result, READS)]
    if "rows_read" in result:
        lines.append(
            f"rows read back by the data source: {result['rows_read']}; live files: {result['files']}"
        )
    return "\n".join(lines)


def _pairs(result: Mapping[str, Any], pairs: tuple[Pair, ...]) -> list[str]:
    lines: list[str] = []
    for pair in pairs:
        ours = median(result, pair.ours)
        for plain in (pair.plain, *pair.also):
            if not any(line.startswith(f"  {LABELS[plain]} ") for line in lines):
                lines.append(_line(result, plain, ""))
        ratio = ours / median(result, pair.plain)
        verdict = ""
        if pair.target is not None:
            verdict = f"<={pair.target:.1f}x {'met' if ratio <= pair.target else 'MISSED'}"
        extra = "".join(f"; {ours / median(result, a):.2f}x {a}" for a in pair.also)
        lines.append(_line(result, pair.ours, f"{ratio:5.2f}x {verdict:<11}") + extra)
    return lines


def _line(result: Mapping[str, Any], name: str, ratio: str) -> str:
    parts = "/".join(f"{median(result, name, p):.2f}" for p in ("before_tasks", "tasks", "after_tasks"))
    tasks = max(run.get("spark_tasks", 0) for run in result[name])
    text = f"  {LABELS[name]:<53} {median(result, name):7.2f}s {ratio or '':<18} {parts:>20} {tasks:3d} tasks"
    if any("service_commit" in run for run in result[name]):
        text += f"   {median(result, name, 'service_commit') * 1000:6.1f} ms"
    return text
