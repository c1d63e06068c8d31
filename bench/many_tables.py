"""Many tables on one coordinator: the overview and the table list must not grow with the table count.

usage: python bench/run.py --many-tables 10000 [--databases postgres]

On each database: `coordinator serve` as a real subprocess on a fresh warehouse; N tables created and
given one commit each over HTTP by concurrent clients; then, over HTTP only:

- GET /ops/overview warm (the dashboard's default page), then the service is restarted and the FIRST
  GET /ops/overview after the restart is timed on its own (issue 14: 45.7 s at 10,000 tables before);
- GET /tables?limit=100: the first page, and every page of a walk through all N tables (keyset paging:
  the last page must cost what the first costs);
- a name-prefix search (GET /tables?name_prefix=...).

Targets (issue 14, PostgreSQL): overview < 500 ms, also the first call after a restart; GET
/tables?limit=100 < 100 ms. Times are wall clock around one HTTP request on a keep-alive connection.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.data import FIELDS, rows
from bench.procs import progress
from bench.service import CoordinatorProcess, postgres_database, sqlite_url

DATABASE = "many"
DT = "2024-01-01"
WORKERS = 8
REPEATS = 20
OVERVIEW_TARGET_MS = 500.0
LIST_TARGET_MS = 100.0
TIMEOUT = httpx.Timeout(120.0, connect=10.0)


def table_name(i: int) -> str:
    return f"t{i:05d}"


@contextmanager
def database_url(database: str, root: Path) -> Iterator[str]:
    if database == "sqlite":
        yield sqlite_url(root)
    else:
        with postgres_database() as url:
            yield url


def template_file(root: Path) -> tuple[Path, dict[str, Any]]:
    """One real 10-row parquet file; every table's commit names a hard link to it (the service reads
    each file's footer at commit time, and a link's is that of a real file of what it claims, so this
    costs the commit what distinct files would)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = root / "template.parquet"
    pq.write_table(pa.Table.from_pylist(rows(DT, 0)), path)
    return path, {"fileSize": path.stat().st_size, "rowCount": 10}


def create_and_commit(client: httpx.Client, i: int, template: tuple[Path, dict[str, Any]]) -> None:
    body = {
        "database": DATABASE,
        "name": table_name(i),
        "fields": [{"name": n, "type": t} for n, t in FIELDS.items()],
        "partitionKeys": ["dt"],
        "options": {"bucket": "-1", "file.format": "parquet"},
    }
    response = client.post("/tables", json=body)
    if response.status_code != 201:
        raise RuntimeError(f"create {table_name(i)}: {response.status_code} {response.text}")
    table = response.json()
    directory = Path(table["location"]) / f"dt={DT}" / "bucket-0"
    directory.mkdir(parents=True, exist_ok=True)
    name = f"data-{uuid.uuid4()}-0.parquet"
    os.link(template[0], directory / name)
    commit = {
        "commitUser": f"bench-{i}",
        "identifier": 1,
        "messages": [{"partition": {"dt": DT}, "bucket": 0, "newFiles": [{"fileName": name, **template[1]}]}],
    }
    response = client.post(f"/tables/{table['id']}/commits", json=commit)
    if response.status_code != 201:
        raise RuntimeError(f"commit to {table['id']}: {response.status_code} {response.text}")


def populate(url: str, root: Path, count: int) -> dict[str, Any]:
    """N tables with one commit each, by WORKERS concurrent keep-alive clients."""
    template = template_file(root)
    local = threading.local()
    clients: list[httpx.Client] = []
    guard = threading.Lock()

    def one(i: int) -> None:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(base_url=url, timeout=TIMEOUT)
            with guard:
                clients.append(client)
        create_and_commit(client, i, template)

    started = time.perf_counter()
    done = 0
    try:
        with ThreadPoolExecutor(WORKERS) as pool:
            for _ in pool.map(one, range(count)):
                done += 1
                if done % 1000 == 0:
                    progress(f"  {done} tables created and committed to")
    finally:
        for client in clients:
            client.close()
    elapsed = time.perf_counter() - started
    return {"tables": count, "seconds": elapsed, "tables_per_s": count / elapsed}


def timed(client: httpx.Client, path: str, params: dict[str, Any] | None = None) -> tuple[float, Any]:
    started = time.perf_counter()
    response = client.get(path, params=params)
    ms = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        raise RuntimeError(f"GET {path}: {response.status_code} {response.text}")
    return ms, response.json()


def repeated(call: Callable[[], tuple[float, Any]], n: int = REPEATS) -> dict[str, float]:
    times = sorted(call()[0] for _ in range(n))
    return {"p50_ms": statistics.median(times), "max_ms": times[-1], "n": n}


def walk(client: httpx.Client, limit: int) -> dict[str, Any]:
    """Every page of GET /tables; each table must come exactly once."""
    token: str | None = None
    times, seen = [], []
    while True:
        params: dict[str, Any] = {"limit": limit, **({"page_token": token} if token else {})}
        ms, body = timed(client, "/tables", params)
        times.append(ms)
        seen += [t["id"] for t in body["tables"]]
        token = body["nextPageToken"]
        if token is None:
            break
    if len(seen) != len(set(seen)):
        raise RuntimeError("a table came twice in the walk")
    times.sort()
    return {
        "pages": len(times),
        "tables": len(seen),
        "p50_ms": statistics.median(times),
        "max_ms": times[-1],
        "last_page_ms": times[-1],
    }


def measure(url: str, count: int) -> dict[str, Any]:
    with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
        prefix = table_name(count - 1)[:-1]  # the last ten tables (or fewer)
        _, overview = timed(client, "/ops/overview")
        if overview["totals"]["tables"] != count or overview["totals"]["fileCount"] != count:
            raise RuntimeError(f"overview totals {overview['totals']} for {count} tables")
        _, found = timed(client, "/tables", {"limit": 100, "name_prefix": prefix})
        expected = [f"{DATABASE}.{table_name(i)}" for i in range(count) if table_name(i).startswith(prefix)]
        if [t["id"] for t in found["tables"]] != expected:
            raise RuntimeError(f"name_prefix={prefix} found {[t['id'] for t in found['tables']]}")
        return {
            "overview": repeated(lambda: timed(client, "/ops/overview")),
            "tables_limit_100": repeated(lambda: timed(client, "/tables", {"limit": 100})),
            "name_prefix_search": {
                "prefix": prefix,
                "found": len(found["tables"]),
                **repeated(lambda: timed(client, "/tables", {"limit": 100, "name_prefix": prefix})),
            },
            "walk_limit_100": walk(client, 100),
            "overview_totals": overview["totals"],
            "overview_tables_listed": len(overview["tables"]),
        }


def after_restart(url: str) -> dict[str, float]:
    """The first requests a freshly started service answers: nothing cached yet."""
    with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
        timed(client, "/health")  # the connection, so that the overview's time is the overview's
        first_overview, _ = timed(client, "/ops/overview")
        first_tables, _ = timed(client, "/tables", {"limit": 100})
    return {"first_overview_ms": first_overview, "first_tables_limit_100_ms": first_tables}


def run(database: str, root: Path, count: int) -> dict[str, Any]:
    root.mkdir(parents=True, exist_ok=True)
    with database_url(database, root) as db_url:
        service = CoordinatorProcess(db_url, root / "warehouse", root / "service.log")
        with service:
            progress(f"many tables on {database}: creating {count} tables with one commit each")
            created = populate(service.url, root, count)
            progress(f"many tables on {database}: {created['tables_per_s']:.0f} tables/s; measuring warm")
            warm = measure(service.url, count)
            progress(f"many tables on {database}: restarting the service")
            service.stop()
            service.start()
            restarted = after_restart(service.url)
    return {"database": database, "created": created, "warm": warm, "after_restart": restarted}


def _verdict(ms: float, target: float) -> str:
    return "met" if ms < target else "MISSED"


def report(results: list[dict[str, Any]]) -> str:
    lines = []
    for r in results:
        if "error" in r:
            lines.append(f"\n## many tables on {r['database']}: FAILED\n{r['error']}")
            continue
        warm, first, n = r["warm"], r["after_restart"], r["created"]["tables"]
        overview, listed, walked = warm["overview"], warm["tables_limit_100"], warm["walk_limit_100"]
        search = warm["name_prefix_search"]
        overview_target, list_target = OVERVIEW_TARGET_MS, LIST_TARGET_MS
        measured = [
            ("GET /ops/overview, first call after a restart", first["first_overview_ms"], overview_target),
            ("GET /ops/overview warm, p50", overview["p50_ms"], overview_target),
            ("GET /ops/overview warm, max", overview["max_ms"], overview_target),
            (
                "GET /tables?limit=100, first call after a restart",
                first["first_tables_limit_100_ms"],
                list_target,
            ),
            ("GET /tables?limit=100 warm, p50", listed["p50_ms"], list_target),
            ("GET /tables?limit=100 warm, max", listed["max_ms"], list_target),
            ("GET /tables?limit=100, every page of a walk, p50", walked["p50_ms"], list_target),
            ("GET /tables?limit=100, every page of a walk, max", walked["max_ms"], list_target),
            (f"GET /tables?name_prefix={search['prefix']}, p50", search["p50_ms"], list_target),
        ]
        lines.append(f"\n## many tables on {r['database']}: {n:,} tables, one commit each")
        lines.append(
            f"created in {r['created']['seconds']:.0f} s ({r['created']['tables_per_s']:.0f} tables/s, "
            f"{WORKERS} concurrent clients); walk: {walked['pages']} pages, {walked['tables']:,} tables, "
            "each once"
        )
        lines.append("\n| request | ms | target | |\n|---|---:|---:|---|")
        for name, ms, target in measured:
            lines.append(f"| {name} | {ms:.1f} | < {target:g} | {_verdict(ms, target)} |")
    return "\n".join(lines)


def main(databases: list[str], count: int, tmp: Path, results_dir: Path) -> int:
    results = []
    failed = False
    for database in databases:
        try:
            results.append(run(database, tmp / f"many-{database}", count))
        except Exception:
            import traceback

            failed = True
            results.append({"database": database, "error": traceback.format_exc()})
            progress(f"many tables on {database} FAILED")
    print(report(results))
    results_dir.mkdir(exist_ok=True)
    path = results_dir / f"many-tables-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"tables": count, "runs": results}, indent=1) + "\n")
    print(f"\nraw numbers: {path}")
    return 1 if failed else 0
