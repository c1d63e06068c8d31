"""The five example jobs run as the README says, against the embedded default (SQLite + local folder)."""

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
from tests.support.paimon_files import pypaimon_table
from tests.support.served import LiveServer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXAMPLES = REPO / "examples"


@pytest.fixture
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_database("sqlite", request, tmp_path)


@pytest.fixture
def examples() -> Iterator[dict[str, ModuleType]]:
    sys.path.insert(0, str(EXAMPLES))
    try:
        names = ("batch_job", "streaming_job", "compaction_job", "changes_job", "transaction_job")
        yield {name: importlib.import_module(name) for name in names}
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
    assert pypaimon_table(warehouse, "sales.orders").num_rows == 99_000
    # The table at snapshot 1, then the 10,000 upserts and 1,000 deletes; the compaction is no change.
    assert examples["changes_job"].main(live_server.url, tmp_path / "changes") == {"+I": 110_000, "-D": 1_000}

    work = tmp_path / "work"
    assert examples["streaming_job"].main(live_server.url, work) == 3_000
    assert examples["streaming_job"].main(live_server.url, work) == 6_000  # resumed from its checkpoint
    assert sorted(pypaimon_table(warehouse, "sales.events")["id"].to_pylist()) == list(range(6_000))

    # Both tables in one transaction; run again for the same day, nothing new is committed.
    assert examples["transaction_job"].main(live_server.url) == [1, 1]
    assert examples["transaction_job"].main(live_server.url) == [1, 1]
    assert pypaimon_table(warehouse, "billing.invoices").num_rows == 10_000
    assert pypaimon_table(warehouse, "billing.customers").num_rows == 500

    printed = capsys.readouterr().out
    assert "sales.orders now holds 99,000 orders" in printed
    assert "compacted sales.orders: " in printed
    assert "day 20261120 already loaded: billing.invoices snapshot 1, billing.customers snapshot 1" in printed
    assert data_files_on_storage(str(warehouse / "sales.db" / "events"))
