"""The service's CPU as the benchmarks read it from /proc (bench/cpu.py): with `--workers`, the parent's
and every worker's, those that ended included."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.cpu import process_cpu_seconds, process_tree_cpu_seconds

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5:\n    pass\n"
PARENT = f"""
import subprocess, sys, time
ended = subprocess.Popen([sys.executable, "-c", {BURN!r}])
ended.wait()  # reaped: its CPU is in the parent's cutime now
live = subprocess.Popen([sys.executable, "-c", {BURN!r} + "time.sleep(60)"])
print("ready", flush=True)
time.sleep(60)
"""


def test_a_process_tree_counts_its_children_live_and_ended() -> None:
    with subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True) as parent:
        measured(parent)


def measured(parent: subprocess.Popen[str]) -> None:
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 30
        while process_tree_cpu_seconds(parent.pid) < 1.0:  # two children's 0.5 s each
            assert time.monotonic() < deadline, process_tree_cpu_seconds(parent.pid)
            time.sleep(0.1)
        assert process_cpu_seconds(parent.pid) < 0.5  # the parent itself only started them
    finally:
        parent.kill()
        parent.wait()
