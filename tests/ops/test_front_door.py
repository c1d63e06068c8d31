"""The front door (issue 31, item 7): a README of at most 200 lines whose quick start works as pasted, and
walkthroughs in docs/ that do too, each run twice in a row against a served coordinator, reading back
what was written. (tests/spark/test_examples.py runs the quick start with `make examples`' Spark jobs.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.front_door import DOCS, README, make_target_lines, pasted_blocks, run_pasted
from tests.support.paimon_files import pypaimon_rows
from tests.support.served import ServedCoordinator

QUICK_START_ROW = re.compile(r"^  (\S+)  trip +(\d+)  (\S+) +(\S+)$", re.M)
CITIES_AND_FARES = (("Lisbon", "12.50"), ("Porto", "8.20"), ("Faro", "23.75"))


@pytest.fixture
def served(tmp_path: Path, warehouse: Path) -> Iterator[ServedCoordinator]:
    """`coordinator serve` as `make serve` runs it, on a database and warehouse of this test."""
    with ServedCoordinator(
        f"sqlite:///{tmp_path}/coordinator.db", warehouse, tmp_path / "coordinator.log"
    ) as coordinator:
        yield coordinator


def quick_start_rows(runs: int) -> list[dict[str, Any]]:
    """What `runs` runs of examples/quickstart.py write: three rows each, trip ids counting on."""
    return [
        {"dt": "2026-11-20", "trip_id": 3 * run + i + 1, "city": city, "fare": Decimal(fare)}
        for run in range(runs)
        for i, (city, fare) in enumerate(CITIES_AND_FARES)
    ]


def printed_rows(stdout: str) -> list[dict[str, Any]]:
    """The rows the quick start printed after pypaimon read them back."""
    return [
        {"dt": dt, "trip_id": int(trip), "city": city, "fare": Decimal(fare)}
        for dt, trip, city, fare in QUICK_START_ROW.findall(stdout)
    ]


def test_the_readme_is_short_and_serves_as_make_serve_does() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines"
    quick_start = README.read_text().split("## Quick start", 1)[1]
    assert "```bash\nmake serve\n```" in quick_start, "the quick start no longer starts with make serve"
    # What the served coordinator of these tests runs in place of `make serve`.
    assert make_target_lines("serve") == ["$(BIN)/coordinator serve"]
    assert len(pasted_blocks(README)) == 1, "the README's quick start is one block that runs as pasted"


def test_readme_quick_start_runs_as_pasted_twice(served: ServedCoordinator, warehouse: Path) -> None:
    (block,) = pasted_blocks(README)
    for run in (1, 2):
        out = run_pasted(block, served.url).stdout
        assert f"committed quickstart.trips snapshot {run} (APPEND)" in out
        assert f"pypaimon reads {3 * run} rows of quickstart.trips:" in out
        assert printed_rows(out) == quick_start_rows(run)
        latest = re.search(r'^\{"id":(\d+),.*"commitUser":"quickstart"', out, re.M)
        assert latest is not None, out
        assert int(latest.group(1)) == run
    read = pypaimon_rows(warehouse, "quickstart.trips")
    assert sorted(read, key=lambda row: row["trip_id"]) == quick_start_rows(2)


def test_walkthroughs_of_the_docs_run_as_pasted_twice(served: ServedCoordinator, warehouse: Path) -> None:
    documents = {path.name: pasted_blocks(path) for path in sorted(DOCS.glob("*.md"))}
    assert len(documents["api.md"]) == 1
    assert len(documents["transactions.md"]) == 1
    outputs = [
        [run_pasted(block, served.url).stdout for blocks in documents.values() for block in blocks]
        for _ in range(2)
    ]
    first, second = ("\n".join(out) for out in outputs)
    assert '"snapshots":[{"id":1,"commitKind":"APPEND"}],"deduplicated":false' in first
    assert '"snapshots":[{"id":1,"commitKind":"APPEND"}],"deduplicated":true' in second  # a resend
    assert first.count('"deduplicated":false') == 2
    assert second.count('"deduplicated":true') == 2
    assert "TABLE_ALREADY_EXISTS" not in first
    assert second.count('"code":"TABLE_ALREADY_EXISTS"') == 3

    with httpx.Client(base_url=served.url) as http:
        for table, rows in (("demo.events", 3), ("demo.orders", 2), ("demo.customers", 2)):
            assert http.get(f"/tables/{table}").json()["latestSnapshotId"] == 1
            assert len(pypaimon_rows(warehouse, table)) == rows
    assert pypaimon_rows(warehouse, "demo.events") == [
        {"dt": "2024-01-01", "id": 1, "amount": Decimal("9.50")},
        {"dt": "2024-01-01", "id": 2, "amount": Decimal("12.00")},
        {"dt": "2024-01-01", "id": 3, "amount": Decimal("3.25")},
    ]
    assert pypaimon_rows(warehouse, "demo.customers") == [
        {"dt": "2024-01-01", "customer_id": 7, "name": "Ana"},
        {"dt": "2024-01-01", "customer_id": 8, "name": "Rui"},
    ]
