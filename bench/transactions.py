"""A 2-table transaction beside the same two commits made one after the other, in the same run.

usage: python bench/run.py --transactions [--pairs 200] [--databases sqlite,postgres]

On each database: `coordinator serve` as a real subprocess on a fresh warehouse, two append tables, and
`pairs` pairs of 1-file changes (files written before the clock starts). Each pair is committed twice,
alternating so that both ways see the same tables' growth: as two POST /tables/{id}/commits in turn
(their latencies summed), and as one POST /transactions naming both. Issue 19's target: the
transaction's p50 at most the summed p50 of the two commits (one request, one commit point).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from bench.coordinator_bench import JSON_HEADERS, create_table, new_client
from bench.data import ROWS_PER_FILE, partition_of, rows
from bench.procs import progress
from bench.service import CoordinatorProcess, postgres_database, sqlite_url
from bench.stats import summarize
from bench.table_files import AppendTable

RESULTS = Path(__file__).resolve().parent / "results"


def _message(table: AppendTable, i: int) -> dict[str, Any]:
    batch = rows(partition_of(i), i * ROWS_PER_FILE)
    return table.message(batch[0], newFiles=[table.append_file(batch)])


def _timed(client: httpx.Client, path: str, body: dict[str, Any]) -> float:
    data = json.dumps(body).encode()
    started = time.perf_counter()
    response = client.post(path, content=data, headers=JSON_HEADERS)
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 201:
        raise RuntimeError(f"{path} answered {response.status_code}: {response.text[:500]}")
    return elapsed


def run(database: str, root: Path, pairs: int) -> dict[str, Any]:
    root.mkdir(parents=True)
    with ExitStack() as stack:
        url = sqlite_url(root) if database == "sqlite" else stack.enter_context(postgres_database())
        service = stack.enter_context(CoordinatorProcess(url, root / "warehouse", root / "service.log"))
        with new_client(service.url) as client:
            fact, _ = create_table(client, "fact")
            dim, _ = create_table(client, "dim")
            progress(f"transactions on {database}: writing {4 * pairs} files")
            work = [
                [(_message(fact, 4 * k + j), _message(dim, 4 * k + j)) for j in (1, 2)] for k in range(pairs)
            ]
            client.get("/health")
            separate, together = [], []
            progress(f"transactions on {database}: {pairs} pairs of commits and {pairs} transactions")
            for k, ((f1, d1), (f2, d2)) in enumerate(work):
                user = f"bench-{uuid.uuid4().hex[:8]}"
                one = _timed(
                    client,
                    f"/tables/{fact.id}/commits",
                    {"commitUser": user, "identifier": k, "messages": [f1]},
                )
                two = _timed(
                    client,
                    f"/tables/{dim.id}/commits",
                    {"commitUser": user, "identifier": k, "messages": [d1]},
                )
                separate.append(one + two)
                body = {
                    "commitUser": f"{user}-tx",
                    "identifier": k,
                    "tables": [{"table": fact.id, "messages": [f2]}, {"table": dim.id, "messages": [d2]}],
                }
                together.append(_timed(client, "/transactions", body))
    return {
        "database": database,
        "pairs": pairs,
        "two_commits_ms": summarize(separate),
        "transaction_ms": summarize(together),
    }


def report(results: list[dict[str, Any]]) -> str:
    lines = [
        "| database | two commits in turn, p50 | one transaction, p50 | sum / transaction | target |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        two, one = r["two_commits_ms"]["p50"], r["transaction_ms"]["p50"]
        verdict = "met" if one <= two else "MISSED"
        figures = f"{two:.2f} ms | {one:.2f} ms | {two / one:.2f}x"
        lines.append(f"| {r['database']} | {figures} | >= 1.0x: {verdict} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench/run.py --transactions", description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--databases", default="sqlite,postgres")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for database in args.databases.split(","):
            results.append(run(database, Path(tmp) / database, args.pairs))
    print(report(results))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"transactions-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"raw numbers: {out}")
    return 0
