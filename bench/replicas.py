"""2 replicas x 8 writers on one table: this checkout's service beside a baseline revision's, same load.

Each side runs two `coordinator serve` processes on one fresh PostgreSQL database and one warehouse
folder; the contention case of bench/coordinator_bench.py sends its writers to them alternately (4 each)
and verifies that no acknowledged commit is lost. The baseline's service and client come from
`git archive <revision>` into a temp folder, run by the same Python with PYTHONPATH on that checkout.
The sides' runs alternate (ours 1, baseline 1, baseline 2, ours 2, ours 3, ...), so that a busy minute
hits both and neither always goes first.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import coordinator_bench
from bench.data import Counts
from bench.procs import progress
from bench.service import (
    CHECKED_OUT,
    REPO,
    CoordinatorProcess,
    folders_at,
    postgres_database,
    service_env,
)

REPLICAS = 2
DEFAULT_BASELINE = "cb82dde"
"""main before issue 18: the revision the issue's replica target is set against."""


@dataclass(frozen=True)
class Side:
    """One side's replicas: their URLs and their shared warehouse folder."""

    name: str
    urls: list[str]
    warehouse: Path


def run_replicas(root: Path, counts: Counts, baseline: str) -> dict[str, Any]:
    """counts.contention_runs runs per side; the raw contention results of both sides."""
    revision = resolve(baseline)
    source = checkout(revision, root / "baseline-source")
    with ExitStack() as stack:
        sides = [
            stack.enter_context(replica_side("ours", REPO, root / "ours")),
            stack.enter_context(replica_side("baseline", source, root / "baseline")),
        ]
        runs: dict[str, list[dict[str, Any]]] = {side.name: [] for side in sides}
        for run in range(1, counts.contention_runs + 1):
            for side in sides if run % 2 else sides[::-1]:
                progress(f"{REPLICAS} replicas ({side.name}): contention run {run}/{counts.contention_runs}")
                runs[side.name].append(coordinator_bench.contention(side.urls, side.warehouse, counts, run))
    return {"replicas": REPLICAS, "baseline_revision": revision, **runs}


def resolve(revision: str) -> str:
    """The full commit id of `revision` in this repository (fails early on a typo)."""
    done = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{revision}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise ValueError(f"baseline {revision}: not a commit here ({done.stderr.strip()})")
    return done.stdout.strip()


def checkout(revision: str, into: Path) -> Path:
    """The service's folders at `revision`, extracted under `into` (a folder of the run, removed with it).

    `git archive` rather than `git worktree add`: nothing is registered in the repository.
    """
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", revision, *folders_at(revision, CHECKED_OUT)],
        capture_output=True,
        check=True,
    ).stdout
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


@contextmanager
def replica_side(name: str, source: Path, root: Path) -> Iterator[Side]:
    """REPLICAS services of `source` on one fresh database and warehouse; stopped, and the database
    dropped, on exit."""
    check_source(source)
    warehouse = root / "warehouse"
    warehouse.mkdir(parents=True)
    with ExitStack() as stack:
        url = stack.enter_context(postgres_database())
        services = []
        # One after the other: the first migrates the fresh database, the next finds it migrated.
        for k in range(REPLICAS):
            log = root / f"replica-{k}.log"
            services.append(stack.enter_context(CoordinatorProcess(url, warehouse, log, source)))
        yield Side(name, [s.url for s in services], warehouse)


def check_source(source: Path) -> None:
    """The services of `source` import its code, not the code installed in the venv."""
    done = subprocess.run(
        [sys.executable, "-c", "import coordinator; print(coordinator.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        env=service_env(source),
    )
    if not Path(done.stdout.strip()).is_relative_to(source):
        raise RuntimeError(f"a service of {source} would import {done.stdout.strip()}")
