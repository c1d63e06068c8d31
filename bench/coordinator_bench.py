"""The coordinator side: commits over HTTP to a running `coordinator serve`.

Every request body is serialized before the clock starts, so a latency is the POST alone: the HTTP
round trip plus the service's work. The response's `timings` (per-phase ms measured in the service)
are kept beside each latency to show where the time goes.
"""

from __future__ import annotations

import json
import os
import time
import traceback
import uuid
from collections.abc import Sequence
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import httpx

from bench.data import (
    DATABASE,
    FIELDS,
    ROWS_PER_FILE,
    Counts,
    acknowledged_ids,
    contention_ids,
    partition_of,
    rows,
    warm_up_parquet,
    writer_partition,
)
from bench.procs import launch_together
from bench.stats import median_phases, summarize, window
from bench.table_files import AppendTable
from bench.verify import verify_contention
from coordinator_client.models import BATCH_IDENTIFIER

MAX_ATTEMPTS = 20
JSON_HEADERS = {"content-type": "application/json"}
# A 10,000-message commit can take seconds; a timeout would only turn a slow answer into a resend.
TIMEOUT = httpx.Timeout(600.0, connect=10.0)


def new_client(url: str) -> httpx.Client:
    """One keep-alive connection per client, as a long-lived writer would hold."""
    return httpx.Client(base_url=url, timeout=TIMEOUT)


def create_table(client: httpx.Client, name: str) -> tuple[AppendTable, dict[str, Any]]:
    """POST /tables: the baseline's shape (partitioned by dt, bucket-unaware append table)."""
    body = {
        "database": DATABASE,
        "name": name,
        "fields": [{"name": n, "type": t} for n, t in FIELDS.items()],
        "partitionKeys": ["dt"],
        "options": {"bucket": "-1", "file.format": "parquet"},
    }
    response = client.post("/tables", json=body)
    if response.status_code != 201:
        raise RuntimeError(f"create table {name}: {response.status_code} {response.text}")
    answer: dict[str, Any] = response.json()
    return AppendTable(answer), answer


def commit_body(user: str, identifier: int, messages: list[dict[str, Any]]) -> bytes:
    return json.dumps({"commitUser": user, "identifier": identifier, "messages": messages}).encode()


def timed_post(client: httpx.Client, table_id: str, body: bytes) -> tuple[float, httpx.Response]:
    """Seconds for one POST /commits (body already serialized) and its response."""
    started = time.perf_counter()
    response = client.post(f"/tables/{table_id}/commits", content=body, headers=JSON_HEADERS)
    return time.perf_counter() - started, response


def created(response: httpx.Response) -> dict[str, Any]:
    """The 201 body, or an error that quotes the service's answer."""
    if response.status_code != 201:
        raise RuntimeError(f"commit answered {response.status_code}: {response.text[:2000]}")
    answer: dict[str, Any] = response.json()
    return answer


def latest_snapshot(client: httpx.Client, table_id: str) -> dict[str, Any]:
    response = client.get(f"/tables/{table_id}/snapshots/latest")
    response.raise_for_status()
    answer: dict[str, Any] = response.json()
    return answer


# ---------------------------------------------------------------- 1. sequential 1-file commits


def sequential(url: str, counts: Counts) -> dict[str, Any]:
    """counts.sequential_commits one-file commits, partitions round robin; the files are written first."""
    with new_client(url) as client:
        table, _ = create_table(client, "seq")
        user = f"bench-seq-{uuid.uuid4().hex[:8]}"
        bodies = []
        for i in range(1, counts.sequential_commits + 1):
            batch = rows(partition_of(i), i * ROWS_PER_FILE)
            message = table.message(batch[0], newFiles=[table.append_file(batch)])
            bodies.append(commit_body(user, i, [message]))
        client.get("/health")  # open the keep-alive connection now, so commit 1 does not pay the connect
        latencies: list[float] = []
        timings: list[dict[str, float]] = []
        for body in bodies:
            seconds, response = timed_post(client, table.id, body)
            latencies.append(seconds * 1000)
            timings.append(created(response)["timings"])
        latest = latest_snapshot(client, table.id)
    expected_rows = counts.sequential_commits * ROWS_PER_FILE
    if latest["id"] != counts.sequential_commits or latest["totalRecordCount"] != expected_rows:
        raise RuntimeError(f"sequential: latest snapshot {latest['id']}, {latest['totalRecordCount']} rows")
    return {"commit_ms": latencies, "timings_ms": timings, "windows": windows(latencies, timings, counts)}


def windows(
    latencies: Sequence[float], timings: Sequence[dict[str, float]], counts: Counts
) -> dict[str, Any]:
    """Per window: the client's latency summary and the service's median phase times."""
    out = {}
    for name, (first, last) in counts.windows.items():
        phases = median_phases(window(timings, first, last))
        out[name] = {
            "commits": [first, last],
            "commit_ms": summarize(window(latencies, first, last)),
            "server_phase_median_ms": phases,
        }
    return out


# ---------------------------------------------------------------- 2. one commit of many messages


def link_files(table: AppendTable, count: int, partitions: Sequence[str]) -> list[dict[str, Any]]:
    """`count` one-file messages over the partitions; one real parquet file per partition, hard-linked.

    The service reads each file's footer at commit time (one ranged read of its tail), and a link's tail
    is that of a real file of the rows it claims, so the links cost the commit what distinct files would,
    and staging takes a second instead of a minute (10,000 parquet writes).
    """
    templates: dict[str, tuple[Path, dict[str, Any]]] = {}
    messages = []
    for k in range(count):
        dt = partitions[k % len(partitions)]
        if dt not in templates:
            meta = table.append_file(rows(dt, k * ROWS_PER_FILE))
            templates[dt] = (Path(table.bucket_dir({"dt": dt})), meta)
            file_meta = meta
        else:
            directory, meta = templates[dt]
            name = f"data-{uuid.uuid4()}-0.parquet"
            os.link(directory / meta["fileName"], directory / name)
            file_meta = {**meta, "fileName": name}
        messages.append({"partition": {"dt": dt}, "bucket": 0, "newFiles": [file_meta]})
    return messages


def big_commit(url: str, counts: Counts, partitions: Sequence[str]) -> dict[str, Any]:
    """One POST carrying counts.big_files messages of one file each."""
    with new_client(url) as client:
        table, _ = create_table(client, "big")
        messages = link_files(table, counts.big_files, partitions)
        body = commit_body(f"bench-big-{uuid.uuid4().hex[:8]}", BATCH_IDENTIFIER, messages)
        client.get("/health")
        seconds, response = timed_post(client, table.id, body)
        answer = created(response)
        latest = latest_snapshot(client, table.id)
    if latest["totalRecordCount"] != counts.big_files * ROWS_PER_FILE:
        raise RuntimeError(f"big commit: {latest['totalRecordCount']} rows in the latest snapshot")
    return {
        "files": counts.big_files,
        "seconds": seconds,
        "request_bytes": len(body),
        "timings_ms": answer["timings"],
        "snapshots": answer["snapshots"],
    }


# ---------------------------------------------------------------- 3. contention


def commit_with_retry(client: httpx.Client, table_id: str, body: bytes) -> tuple[dict[str, Any], int]:
    """POST until the service decides; returns the answer and the number of resends.

    Resending is safe because the same commitUser + identifier is deduplicated by the service: after a
    lost response (transport error) the resend answers 200 with the snapshot the first attempt made.
    """
    for attempt in range(MAX_ATTEMPTS):
        try:
            response = client.post(f"/tables/{table_id}/commits", content=body, headers=JSON_HEADERS)
        except httpx.TransportError:
            time.sleep(0.05 * (attempt + 1))
            continue
        if response.status_code in (200, 201):
            answer: dict[str, Any] = response.json()
            return answer, attempt
        if response.status_code in (429, 503):  # overloaded, or the lock wait timed out: honour Retry-After
            time.sleep(float(response.headers.get("retry-after", "1")))
            continue
        if response.status_code == 409 and response.json().get("conflict", {}).get("retryable"):
            time.sleep(0.01 * (attempt + 1))
            continue
        raise RuntimeError(f"commit answered {response.status_code}: {response.text[:2000]}")
    raise RuntimeError(f"commit not decided after {MAX_ATTEMPTS} attempts")


def writer(job: dict[str, Any], ready: Queue[int], start: Event, out: Queue[dict[str, Any]]) -> None:
    """One contention writer process: per commit, write one parquet file, then POST it.

    The file goes where the table's location says, a local folder or an object store. A commit that
    raises (a rejection, no decision) is reported in `failures`, not acknowledged.
    """
    announced = False
    try:
        table = AppendTable(job["table"])
        k, n = job["writer"], job["commits"]
        user = f"writer-{k}-{uuid.uuid4().hex[:8]}"
        batches = [rows(writer_partition(k), contention_ids(k, j, n).start) for j in range(1, n + 1)]
        records, failures = [], []
        with new_client(job["url"]) as client:
            client.get("/health")  # connect before the start signal
            warm_up_parquet()
            table.filesystem.get_file_info(table.root)  # an object store client's first request, untimed
            ready.put(k)
            announced = True
            start.wait()
            began = time.perf_counter()
            for j, batch in enumerate(batches, 1):
                t0 = time.perf_counter()
                try:
                    message = table.message(batch[0], newFiles=[table.append_file(batch)])
                    t1 = time.perf_counter()
                    answer, resends = commit_with_retry(client, table.id, commit_body(user, j, [message]))
                except Exception as error:
                    failures.append({"identifier": j, "error": repr(error)[:500]})
                    continue
                t2 = time.perf_counter()
                records.append(
                    {
                        "identifier": j,
                        "write_ms": (t1 - t0) * 1000,
                        "commit_ms": (t2 - t1) * 1000,
                        "resends": resends,
                        "deduplicated": answer["deduplicated"],
                        "snapshot": answer["snapshots"][0]["id"],
                        "timings": answer["timings"],
                        "group_size": answer.get("groupSize", 1),
                    }
                )
        out.put(
            {
                "writer": k,
                "commit_user": user,
                "began": began,
                "finished": time.perf_counter(),
                "records": records,
                "failures": failures,
            }
        )
    except BaseException:
        if not announced:
            ready.put(-1)  # do not leave the parent waiting for a writer that will never be ready
        out.put({"writer": job.get("writer", -1), "error": traceback.format_exc()})


def contention(urls: Sequence[str], warehouse: Path, counts: Counts, run: int) -> dict[str, Any]:
    """counts.writers processes x counts.commits_per_writer commits into one fresh table, then verify.

    Writer k sends to urls[k % len(urls)]: with the URLs of several replicas, the writers alternate
    between them, as a load balancer would spread them.
    """
    with new_client(urls[0]) as client:
        table, answer = create_table(client, f"contend_{run}")
    jobs = [
        {"writer": k, "commits": counts.commits_per_writer, "url": urls[k % len(urls)], "table": answer}
        for k in range(counts.writers)
    ]
    released, reports = launch_together(writer, jobs)
    failures = [f for r in reports for f in r["failures"]]
    if failures:  # here every commit must be decided: a failure fails the run
        raise RuntimeError(f"{len(failures)} commits failed, e.g.: {failures[0]['error']}")
    wall = max(r["finished"] for r in reports) - released
    acknowledged = acknowledged_ids(reports, counts.commits_per_writer)
    check = verify_contention(
        {"warehouse": str(warehouse)}, table.id, table.location, acknowledged, claimed_snapshots(reports)
    )
    records = [{"writer": r["writer"], **c} for r in reports for c in r["records"]]
    timed = [c for c in records if c["timings"]]
    held = [lock_held_ms(c["timings"]) for c in timed]
    # A group shares one lock hold: each member counts for its share, so a group is counted once.
    busy_ms = sum(lock_held_ms(c["timings"]) / c["group_size"] for c in timed)
    return {
        "run": run,
        "replicas": len(urls),
        "writers": counts.writers,
        "commits_per_writer": counts.commits_per_writer,
        "wall_s": wall,
        "commits_per_s": len(acknowledged) / wall,
        "resends": sum(c["resends"] for c in records),
        "commit_ms": summarize([c["commit_ms"] for c in records]),
        "write_ms": summarize([c["write_ms"] for c in records]),
        "server_phase_median_ms": median_phases([c["timings"] for c in records if c["timings"]]),
        "lock_held_ms": summarize(held),
        "lock_busy_fraction": busy_ms / 1000 / wall,
        "group_size_mean": sum(c["group_size"] for c in timed) / max(1, len(timed)),
        "per_writer_s": sorted(r["finished"] - r["began"] for r in reports),
        "verify": check,
        "commits": records,
    }


def claimed_snapshots(reports: list[dict[str, Any]]) -> dict[tuple[str, int], int]:
    """(commitUser, identifier) of every acknowledged commit -> the snapshot id the service answered."""
    return {(r["commit_user"], c["identifier"]): c["snapshot"] for r in reports for c in r["records"]}


def lock_held_ms(timings: dict[str, float]) -> float:
    """How long a commit held the table lock: its total minus what came before acquiring it (for a
    member of a group, the group's hold up to its answer).

    Summed over a contention run (a group counted once) and divided by the wall time, this says how
    much of the run the lock was busy. Near 100 % the critical section bounds the rate; a lower
    fraction means time lost handing the lock over (waiters asleep in their backoff).
    """
    return timings["total"] - timings.get("validate", 0.0) - timings.get("lockWait", 0.0)
