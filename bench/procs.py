"""Child processes: a function run in a clean interpreter, and N writers released together on an Event."""

from __future__ import annotations

import multiprocessing as mp
import queue
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.context import SpawnProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from types import FrameType
from typing import Any

READY_TIMEOUT_S = 180.0
RESULT_TIMEOUT_S = 900.0

# spawn, not fork: every child starts from a fresh interpreter (no inherited sockets, pools or threads),
# and it is what the pypaimon baseline used.
_SPAWN = mp.get_context("spawn")

Writer = Callable[[dict[str, Any], "Queue[int]", Event, "Queue[dict[str, Any]]"], None]


def exit_on_sigterm() -> None:
    """Make SIGTERM raise SystemExit, so `finally` blocks run (stop services, reap children, drop databases).

    Python's default SIGTERM ends the process on the spot, which would orphan whatever it started.
    """

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def _call_into_queue(fn: Callable[..., dict[str, Any]], args: tuple[Any, ...], out: Queue[Any]) -> None:
    exit_on_sigterm()  # terminated by the parent: still reap this process's own children
    try:
        out.put(("ok", fn(*args)))
    except BaseException:
        out.put(("error", traceback.format_exc()))


def _get(out: Queue[Any], processes: Sequence[SpawnProcess], timeout: float) -> Any:
    """The next item, failing fast when every producer died without sending one."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return out.get(timeout=1.0)
        except queue.Empty:
            if not any(p.is_alive() for p in processes):
                raise RuntimeError("child processes exited without reporting") from None
            if time.monotonic() > deadline:
                raise TimeoutError(f"no report from child processes within {timeout:g}s") from None


def _reap(processes: Sequence[SpawnProcess], *, patient: bool) -> None:
    """Join the children; terminate the ones that hang so nothing outlives the benchmark.

    Not patient (the parent is failing or being stopped): terminate at once instead of waiting.
    """
    for p in processes:
        p.join(timeout=30 if patient else 0)
    for p in processes:
        if p.is_alive():
            p.terminate()
            p.join(timeout=10)


def run_isolated(fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """fn(*args) in a spawned process: its imports and heap (GC pauses) stay out of the other measurements."""
    out: Queue[Any] = _SPAWN.Queue()
    process = _SPAWN.Process(target=_call_into_queue, args=(fn, args, out))
    process.start()
    reported = False
    try:
        status, value = _get(out, [process], RESULT_TIMEOUT_S)
        reported = True
    finally:
        _reap([process], patient=reported)
    if status != "ok":
        raise RuntimeError(f"{getattr(fn, '__name__', fn)} failed in its process:\n{value}")
    result: dict[str, Any] = value
    return result


def launch_together(writer: Writer, jobs: Sequence[dict[str, Any]]) -> tuple[float, list[dict[str, Any]]]:
    """Start one process per job, wait until all are ready, release them at once.

    Returns perf_counter() at the release and each writer's report. perf_counter is CLOCK_MONOTONIC on
    Linux, one clock for every process, so the writers' `finished` stamps compare with the release time.
    """
    ready: Queue[int] = _SPAWN.Queue()
    start = _SPAWN.Event()
    out: Queue[dict[str, Any]] = _SPAWN.Queue()
    processes = [_SPAWN.Process(target=writer, args=(job, ready, start, out)) for job in jobs]
    reported = False
    try:
        for p in processes:
            p.start()
        for _ in processes:
            _get(ready, processes, READY_TIMEOUT_S)
        released = time.perf_counter()
        start.set()
        reports = [_get(out, processes, RESULT_TIMEOUT_S) for _ in processes]
        reported = True
    finally:
        start.set()  # a writer still waiting must not block the join below
        _reap(processes, patient=reported)
    errors = [r["error"] for r in reports if "error" in r]
    if errors:
        raise RuntimeError("writer failed:\n" + errors[0])
    return released, reports


def progress(message: str) -> None:
    """A progress line on stderr (the tables go to stdout), stamped with the wall clock."""
    import sys

    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
