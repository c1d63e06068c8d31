"""Where a Spark write's time goes, told by Spark's and the coordinator's own records, not by wrapping code.

A write through the data source plans in a Python worker on the driver (`writer()`), runs its tasks, and
commits in another Python worker on the driver: none of it runs in the benchmark's process, so the
benchmark cannot time the commit call itself. Instead:

- Spark's status store (the UI's REST API, `/api/v1/applications/<id>/stages`) gives each stage's
  submission and completion times, so a timed action splits into *before tasks* (planning: for the data
  source the schema, the writer and its coordinator calls), *tasks* (first stage submitted to last stage
  completed) and *after tasks* (the job's commit: for the data source the Python commit worker, the
  commit request and the sweep of its directories; for a plain write Spark's file commit protocol);
- the CPU seconds of the benchmark's process tree (the driver, Spark's JVM, its Python workers and the
  coordinator, read from /proc before and after): on a machine other jobs share, wall time stretches
  with their load, CPU time much less, so the ratio of CPU seconds is the steadier comparison;
- the coordinator's `/metrics` (`coordinator_commit_phase_seconds_sum{phase="total"}`) gives the time the
  service spent on commits, read before and after the write.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import httpx

COMMIT_TOTAL = re.compile(r'^coordinator_commit_phase_seconds_sum\{phase="total"\} (\S+)$', re.MULTILINE)
SETTLE_S = 5.0
"""How long to wait for Spark's listener bus to record the stages of an action that has returned."""


@dataclass(frozen=True)
class Timed:
    """One timed action: wall time and its split into before, during and after the Spark tasks (s)."""

    total: float
    before_tasks: float
    tasks: float
    after_tasks: float
    cpu: float = 0.0
    """CPU seconds the benchmark's process tree spent on the action (`tree_cpu_seconds`)."""
    spark_tasks: int = 0
    """Tasks of the action's stages: how parallel it ran (local[2] runs two at a time)."""
    service_commit: float | None = None
    """Seconds the coordinator spent committing during the action (None: not a coordinator write)."""

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


class StageClock:
    """Times actions of one Spark session and splits them by the stages Spark ran for them."""

    def __init__(self, spark: Any) -> None:
        context = spark.sparkContext
        if not context.uiWebUrl:
            raise RuntimeError("the Spark UI is off (spark.ui.enabled): its REST API times the stages")
        self._url = f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}/stages"
        self._http = httpx.Client(timeout=30)

    def time(self, action: Callable[[], object], metrics_url: str | None = None) -> Timed:
        """Run `action` and return its timing; with `metrics_url`, also the coordinator's commit time."""
        known = {s["stageId"] for s in self._stages()}
        commits_before = self._commit_seconds(metrics_url) if metrics_url else 0.0
        cpu_before = tree_cpu_seconds()
        started = time.time()
        action()
        ended = time.time()
        cpu = tree_cpu_seconds() - cpu_before
        commits = self._commit_seconds(metrics_url) - commits_before if metrics_url else None
        stages = self._new_stages(known)
        first = min(_epoch(s["submissionTime"]) for s in stages)
        last = max(_epoch(s["completionTime"]) for s in stages)
        return Timed(
            total=ended - started,
            before_tasks=max(first - started, 0.0),
            tasks=last - first,
            after_tasks=max(ended - last, 0.0),
            cpu=cpu,
            spark_tasks=sum(s["numTasks"] for s in stages),
            service_commit=commits,
        )

    def close(self) -> None:
        self._http.close()

    def _stages(self) -> list[dict[str, Any]]:
        answer = self._http.get(self._url)
        answer.raise_for_status()
        stages: list[dict[str, Any]] = answer.json()
        return stages

    def _new_stages(self, known: set[int]) -> list[dict[str, Any]]:
        """The stages the action ran, once Spark has recorded all of them as finished."""
        deadline = time.monotonic() + SETTLE_S
        while True:
            new = [s for s in self._stages() if s["stageId"] not in known]
            ran = [s for s in new if s["status"] == "COMPLETE" and "completionTime" in s]
            if ran and all(s["status"] == "SKIPPED" or s in ran for s in new):
                return ran
            if time.monotonic() > deadline:
                raise RuntimeError(f"Spark recorded no finished stage for the action: {new}")
            time.sleep(0.05)

    def _commit_seconds(self, metrics_url: str) -> float:
        text = self._http.get(f"{metrics_url}/metrics").text
        found = COMMIT_TOTAL.search(text)
        return float(found.group(1)) if found else 0.0


def tree_cpu_seconds(root: int | None = None) -> float:
    """User + system CPU seconds of process `root` (this one) and all its descendants, with what their
    exited and reaped children used (Spark's Python daemon forks and reaps workers)."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # exited meanwhile
            continue
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        ticks[pid] = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    total, todo = 0, [os.getpid() if root is None else root]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo += children.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")


def _epoch(text: str) -> float:
    """Seconds since the epoch of a Spark REST time such as 2026-11-24T11:20:00.123GMT."""
    parsed = datetime.strptime(text.removesuffix("GMT"), "%Y-%m-%dT%H:%M:%S.%f")
    return parsed.replace(tzinfo=timezone.utc).timestamp()
