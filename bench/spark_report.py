"""The Spark data source benchmark's table: medians, ratios to the plain Spark action, targets, and where
each action's time goes (before / during / after its Spark tasks; the coordinator's commit)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from bench.spark_cases import FLOORS, HANDOFF, NULL_SINK, READ_FLOOR, READS, WRITES, Pair

LABELS = {
    "plain": "df.write.parquet",
    "plain_partitioned": "df.write.partitionBy('dt').parquet",
    "plain_sorted": "sortWithinPartitions(dt, bucket, id), by dt/bucket",
    "plain_shuffled": "repartition(4, dt, id) + sort, by dt",
    HANDOFF: "mapInArrow counting rows (Arrow hand-off)",
    NULL_SINK: "a data source writer counting rows (bench-null)",
    READ_FLOOR: "a data source reader of rows in memory (bench-null)",
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
        f"(1-min load average {start:.1f} at the start, {end:.1f} at the end). ratio = ours / the plain",
        "action named above it (wall time; CPU: CPU seconds of the driver, JVM, Python workers and service).",
        f"{'':53} {'wall':>7}  {'ratio':>5} {'target':<11} {'CPU':>7}  {'ratio':>5}  "
        f"{'before/tasks/after':>18}  tasks  service commit",
        "writes",
    ]
    lines += _pairs(result, WRITES)
    for floor in FLOORS:
        if floor in result:  # bench-null is newer than some saved results
            lines.append(_line(result, floor, _ratios(result, floor, "plain", None)) + "  (ratios: of plain)")
    lines += ["full reads (every column to the noop sink)", *_pairs(result, READS)]
    if READ_FLOOR in result:
        ratios = _ratios(result, READ_FLOOR, "read_append_plain", None)
        lines.append(_line(result, READ_FLOOR, ratios) + "  (ratios: of spark.read.parquet, append)")
    if "rows_read" in result:
        lines.append(f"rows read back by the data source: {result['rows_read']}")
        for table, files in result["files"].items():
            if isinstance(files, dict):  # older results hold the count alone
                lines.append(f"  {table}: {files['files']} live files, {files['bytes'] / 2**20:.1f} MB")
    return "\n".join(lines)


def _pairs(result: Mapping[str, Any], pairs: tuple[Pair, ...]) -> list[str]:
    lines: list[str] = []
    for pair in pairs:
        if pair.ours not in result:  # an action newer than the saved result
            continue
        for plain in (pair.plain, *pair.also):
            if not any(line.startswith(f"  {LABELS[plain]} ") for line in lines):
                lines.append(_line(result, plain, ""))
        extra = "".join(f"; {median(result, pair.ours) / median(result, a):.2f}x {a}" for a in pair.also)
        lines.append(_line(result, pair.ours, _ratios(result, pair.ours, pair.plain, pair.target)) + extra)
    return lines


def _ratios(result: Mapping[str, Any], ours: str, plain: str, target: float | None) -> str:
    """Wall ratio and verdict, CPU ratio: the columns between the wall and the breakdown."""
    wall = median(result, ours) / median(result, plain)
    verdict = f"<={target:.1f}x {'met' if wall <= target else 'MISSED'}" if target is not None else ""
    cpu = ""
    if "cpu" in result[ours][0] and "cpu" in result[plain][0]:
        cpu = f"{median(result, ours, 'cpu') / median(result, plain, 'cpu'):5.2f}x"
    return f"{wall:5.2f}x {verdict:<11}|{cpu}"


def _line(result: Mapping[str, Any], name: str, ratios: str) -> str:
    wall_ratio, _, cpu_ratio = ratios.partition("|")
    cpu = f"{median(result, name, 'cpu'):6.2f}s" if "cpu" in result[name][0] else ""
    parts = "/".join(f"{median(result, name, p):.2f}" for p in ("before_tasks", "tasks", "after_tasks"))
    tasks = max(run.get("spark_tasks", 0) for run in result[name])
    text = (
        f"  {LABELS[name]:<51} {median(result, name):6.2f}s  {wall_ratio:<17} {cpu:>7}  {cpu_ratio:>5}  "
        f"{parts:>18}  {tasks:5d}"
    )
    if any("service_commit" in run for run in result[name]):
        text += f"  {median(result, name, 'service_commit') * 1000:8.1f} ms"
    return text
