"""Schemathesis over the whole OpenAPI document (the app's /openapi.json), against a real uvicorn server:
positive and negative data, every phase (schema examples, coverage of boundaries and wrong methods,
fuzzing, stateful sequences over the links it infers), a fixed seed and a bounded example count: about
6,400 calls, 75 s per database here.

No answer may be a 5xx (but a 501 its operation documents: a part of Paimon's protocol not served, such
as a data token for a warehouse not on S3), and no refused request (4xx) may change the warehouse's
files or a table's rows (tests/support/schemathesis_hooks.py looks at both around every call). Every table
route is pointed at a real table with a snapshot (`table_id`, and `prefix`/`database`/`table` under
/v1), created again by the hooks whenever a call dropped it; the other parameters are generated.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from coordinator.settings import Settings
from tests.support import REPO
from tests.support.paimon_files import PaimonTable, pk_table_request, rows_in_bucket
from tests.support.served import LiveServer

SEED = 28
MAX_EXAMPLES = 12
"""Per operation and phase; with the coverage phase's boundary cases, about six thousand calls."""
TABLE = pk_table_request()
ENDLESS = "/events/stream"
PHASES = {"examples": "skip", "coverage": "success", "fuzzing": "success", "stateful": "success"}
"""The document has no examples to replay; the other phases run."""
CONFIG = """
[parameters]
table_id = "sales.orders"
prefix = "{catalog}"
database = "sales"
table = "orders"

[generation]
mode = "all"
"""


def _table_with_a_snapshot(url: str) -> None:
    with httpx.Client(base_url=url, timeout=60) as http:
        created = http.post("/tables", json=TABLE)
        assert created.status_code == 201, created.text
        table = PaimonTable(created.json())
        rows = rows_in_bucket(table, 0, range(10))
        body = {
            "commitUser": "seed",
            "identifier": 1,
            "messages": [table.message(rows[0], newFiles=[table.pk_file(rows, first_sequence=0)])],
        }
        assert http.post(f"/tables/{table.id}/commits", json=body).status_code == 201


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite", "postgres"], indirect=True)
def test_no_request_is_a_5xx_and_no_refused_one_changes_anything(
    settings: Settings, database_url: str, warehouse_location: str, tmp_path: Path
) -> None:
    with LiveServer(settings) as server:
        _table_with_a_snapshot(server.url)
        config = tmp_path / "schemathesis.toml"
        config.write_text(CONFIG.format(catalog=settings.catalog_name))
        report = tmp_path / "report.json"
        started = time.monotonic()
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "schemathesis.cli",
                "--config-file",
                str(config),
                "run",
                f"{server.url}/openapi.json",
                # Server-sent events never end by design, and a call reads its answer to the end:
                # tests/events/test_follow.py drives the stream instead.
                "--exclude-path",
                ENDLESS,
                "--checks",
                "no_server_error,refused_requests_change_nothing",
                "--max-examples",
                str(MAX_EXAMPLES),
                "--seed",
                str(SEED),
                "--workers",
                "1",
                "--report",
                "json",
                "--report-json-path",
                str(report),
                "--warnings",
                "off",
            ],
            cwd=tmp_path,
            env={
                **os.environ,
                # The hooks module is tests/support/schemathesis_hooks.py of this checkout.
                "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                "SCHEMATHESIS_HOOKS": "tests.support.schemathesis_hooks",
                "FUZZ_SERVER_URL": server.url,
                "FUZZ_WAREHOUSE": warehouse_location,
                "FUZZ_DATABASE_URL": database_url,
                "FUZZ_TABLE": json.dumps(TABLE),
            },
            capture_output=True,
            text=True,
            timeout=600,
        )
        seconds = time.monotonic() - started
    assert run.returncode == 0, run.stdout[-20_000:] + run.stderr[-5_000:]
    summary = json.loads(report.read_text())
    print(f"schemathesis: {seconds:.0f} s, {summary['operations']}, {summary['test_cases']}")
    # The whole document was driven, in every phase, and found nothing.
    operations = summary["operations"]
    assert operations["selected"] == operations["total"] - 1 >= 50, operations  # all but ENDLESS
    assert {name: p["status"] for name, p in summary["phases"].items()} == PHASES, summary["phases"]
    assert summary["test_cases"]["generated"] >= 2000, summary["test_cases"]
    assert (summary["failures"], summary["errors"]) == ([], []), summary


def test_the_check_on_refused_requests_can_fail() -> None:
    """The check the run relies on refuses a 4xx that changed a file or a row; a 409 may record its
    rejection in the history, not touch a file."""
    from tests.support import schemathesis_hooks as hooks

    case = SimpleNamespace(id="case-1")
    refused, conflict = SimpleNamespace(status_code=422), SimpleNamespace(status_code=409)
    hooks._calls[case.id] = (({"schema/schema-0": (10, 1)}, "rows"), ({"schema/schema-0": (10, 2)}, "rows"))
    with pytest.raises(AssertionError, match=r"a 422 changed files on storage: \['schema/schema-0'\]"):
        hooks.refused_requests_change_nothing(None, refused, case)
    hooks._calls[case.id] = (({}, "rows"), ({}, "rows and a rejection"))
    with pytest.raises(AssertionError, match="a 422 changed rows"):
        hooks.refused_requests_change_nothing(None, refused, case)
    assert hooks.refused_requests_change_nothing(None, conflict, case)
    hooks._calls[case.id] = (({}, "rows"), ({"data-1.parquet": (5, 1)}, "rows"))
    with pytest.raises(AssertionError, match="a 409 changed files"):
        hooks.refused_requests_change_nothing(None, conflict, case)
    with pytest.raises(AssertionError, match="500"):
        hooks.no_server_error(None, SimpleNamespace(status_code=500, text="boom"), case)
