"""The example jobs as docs/spark.md says: in this process against the embedded default (SQLite + local
folder), and as `make examples` runs them, after the README's quick start, twice in a row against a served
coordinator (issue 31: every job has tables of its own, so nothing collides)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from tests.spark.tables import data_files_on_storage
from tests.support import REPO
from tests.support.databases import fresh_database
from tests.support.front_door import README, example_jobs, pasted_blocks, run_job, run_pasted
from tests.support.paimon_files import pypaimon_table
from tests.support.served import LiveServer, ServedCoordinator

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXAMPLES = REPO / "examples"
EXAMPLE_JOBS = ("batch_job", "streaming_job", "compaction_job", "changes_job", "transaction_job")


@pytest.fixture
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_database("sqlite", request, tmp_path)


@pytest.fixture
def examples() -> Iterator[dict[str, ModuleType]]:
    sys.path.insert(0, str(EXAMPLES))
    try:
        yield {name: importlib.import_module(name) for name in EXAMPLE_JOBS}
    finally:
        sys.path.remove(str(EXAMPLES))


def test_batch_streaming_and_compaction_examples(
    spark: SparkSession,
    live_server: LiveServer,
    examples: dict[str, ModuleType],
    warehouse: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert examples["batch_job"].main(live_server.url) == 100_000 - 1_000
    assert examples["compaction_job"].main(live_server.url) == 8  # 2 partitions x 4 buckets
    assert pypaimon_table(warehouse, "examples.orders").num_rows == 99_000
    # The table at snapshot 1, then the 10,000 upserts and 1,000 deletes; the compaction is no change.
    assert examples["changes_job"].main(live_server.url, tmp_path / "changes") == {"+I": 110_000, "-D": 1_000}

    work = tmp_path / "work"
    assert examples["streaming_job"].main(live_server.url, work) == 3_000
    assert examples["streaming_job"].main(live_server.url, work) == 6_000  # resumed from its checkpoint
    assert sorted(pypaimon_table(warehouse, "examples.events")["id"].to_pylist()) == list(range(6_000))

    # Both tables in one transaction; run again for the same day, nothing new is committed.
    assert examples["transaction_job"].main(live_server.url) == [1, 1]
    assert examples["transaction_job"].main(live_server.url) == [1, 1]
    assert pypaimon_table(warehouse, "examples.invoices").num_rows == 10_000
    assert pypaimon_table(warehouse, "examples.customers").num_rows == 500

    printed = capsys.readouterr().out
    assert "examples.orders now holds 99,000 orders" in printed
    assert "compacted examples.orders: " in printed
    assert (
        "day 20261120 already loaded: examples.invoices snapshot 1, examples.customers snapshot 1" in printed
    )
    assert data_files_on_storage(str(warehouse / "examples.db" / "events"))


@pytest.mark.timeout(1800)
def test_quick_start_then_make_examples_twice_against_a_served_coordinator(
    tmp_path: Path, warehouse: Path
) -> None:
    """The README's quick start as pasted, then every line of `make examples` as its own process, and all
    of it again: each exits 0, and the tables hold what the runs wrote."""
    (quick_start,) = pasted_blocks(README)
    jobs = example_jobs()
    assert jobs[0] == "examples/quickstart.py"
    assert set(jobs[1:]) == {f"examples/{name}.py" for name in EXAMPLE_JOBS}
    with ServedCoordinator(
        f"sqlite:///{tmp_path}/coordinator.db", warehouse, tmp_path / "coordinator.log"
    ) as served:
        for run in (1, 2):
            printed = run_pasted(quick_start, served.url).stdout
            printed += "".join(run_job(job, served.url, tmp_path).stdout for job in jobs)

            # The quick start ran twice per round (the README, then make examples): three rows each time.
            trips = pypaimon_table(warehouse, "quickstart.trips")
            assert sorted(trips["trip_id"].to_pylist()) == list(range(1, 6 * run + 1))
            assert f"pypaimon reads {6 * run} rows of quickstart.trips:" in printed
            assert pypaimon_table(warehouse, "examples.orders").num_rows == 99_000
            assert "examples.orders now holds 99,000 orders" in printed
            # Each run of the changes job goes on from its checkpoint: the batch job's three commits again.
            assert "changes of examples.orders since the last run: +I 110,000, -D 1,000" in printed
            events = pypaimon_table(warehouse, "examples.events")["id"].to_pylist()
            assert sorted(events) == list(range(3_000 * run))  # the stream resumed from its checkpoint
            assert pypaimon_table(warehouse, "examples.invoices").num_rows == 10_000
            assert pypaimon_table(warehouse, "examples.customers").num_rows == 500
            state = "loaded" if run == 1 else "already loaded"
            assert (
                f"day 20261120 {state}: examples.invoices snapshot 1, examples.customers snapshot 1"
                in printed
            )
