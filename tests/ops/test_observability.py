"""Metrics and logs of a real server: /metrics in Prometheus text format whose counters match the commits
the test made, and JSON log lines that carry the request id, table, commitUser, identifier, snapshot ids
and outcome of each commit.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from coordinator_client import Conflict, CoordinatorClient
from tests.support import REPO
from tests.support.commits import append_commit
from tests.support.paimon_files import PaimonTable, create_table
from tests.support.served import ServedCoordinator

DT = "2024-01-01"


def _commit(table: PaimonTable, user: str, identifier: int, row: int, **extra: Any) -> dict[str, Any]:
    return append_commit(table, [{"dt": DT, "id": row}], user=user, identifier=identifier, **extra)


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of the exposition by (name, labels); parsing fails on malformed text."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_metrics_count_the_commits_made(live_server: Any) -> None:
    with CoordinatorClient(live_server.url, timeout=60) as client:
        http = httpx.Client(base_url=live_server.url, timeout=60)
        table = create_table(http, "db", "t", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"])
        bodies = [_commit(table, "writer", n, n) for n in range(3)]
        for body in bodies:
            client.commit(table.id, body)
        resent = client.commit(table.id, bodies[2])  # the same commit sent again
        assert resent.deduplicated is True
        with pytest.raises(Conflict):
            client.commit(table.id, _commit(table, "strict", 0, 5, baseSnapshotId=1))
        client.set_options(table.id, set={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
        assert client.expire(table.id).expired_snapshots == 1
        http.close()

        text = client.metrics()
        history = client.recent_commits(limit=100).recent

    samples = _samples(text)
    committed = [c for c in history if c.outcome == "committed"]
    assert len(committed) == 3
    assert _value(samples, "coordinator_commits_total", outcome="committed", kind="APPEND") == len(committed)
    assert _value(samples, "coordinator_commits_total", outcome="deduplicated", kind="APPEND") == 1
    assert _value(samples, "coordinator_commits_total", outcome="rejected", kind="APPEND") == 1
    assert _value(samples, "coordinator_conflicts_total", type="BASE_SNAPSHOT_MOVED") == 1
    assert _value(samples, "coordinator_dedup_hits_total") == 1
    for phase in (
        "validate",
        "lockWait",
        "reconcile",
        "conflictCheck",
        "manifestWrite",
        "commitPoint",
        "total",
    ):
        assert _value(samples, "coordinator_commit_phase_seconds_count", phase=phase) == 3, phase
    # One lock hold per request: they came one after another, so no two shared a group.
    assert _value(samples, "coordinator_lock_hold_seconds_count", holder="commit") == 5
    assert _value(samples, "coordinator_lock_wait_seconds_count", holder="commit") == 5
    assert _value(samples, "coordinator_commit_group_size_count") == 5
    assert _value(samples, "coordinator_expired_snapshots_total") == 1
    assert _value(samples, "coordinator_expirations_total", trigger="api") == 1
    assert _value(samples, "coordinator_maintenance_actions_total", action="expire") == 1
    assert _value(samples, "coordinator_maintenance_actions_total", action="set-options") == 1
    assert _value(samples, "coordinator_lock_hold_seconds_count", holder="maintenance") == 2


def test_grafana_dashboard_queries_metrics_the_service_exports(live_server: Any) -> None:
    dashboard = json.loads((REPO / "examples" / "grafana-dashboard.json").read_text())
    with CoordinatorClient(live_server.url) as client:
        exported = {family.name for family in text_string_to_metric_families(client.metrics())}
    queries = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    assert len(queries) >= 6
    for query in queries:
        names = {word for word in _identifiers(query) if word.startswith("coordinator_")}
        assert names, query
        for name in names:
            base = (
                name.removesuffix("_bucket")
                .removesuffix("_count")
                .removesuffix("_sum")
                .removesuffix("_total")
            )
            assert base in exported, (query, name)


def _identifiers(query: str) -> set[str]:
    word, words = "", set()
    for ch in query + " ":
        if ch.isalnum() or ch == "_":
            word += ch
        else:
            if word:
                words.add(word)
            word = ""
    return words


# ---------------------------------------------------------------- logs


@pytest.fixture
def served(database_url: str, warehouse: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`coordinator serve` in its own process, its log going to a file."""
    with ServedCoordinator(database_url, warehouse, tmp_path / "coordinator.log") as server:
        yield server.url, server.log


def _log_lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_commit_log_lines_carry_the_request_and_the_commit(served: tuple[str, Path]) -> None:
    url, log = served
    with httpx.Client(base_url=url, timeout=60) as http:
        table = create_table(http, "db", "t", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"])
        # Four writers at once, so some share a group: each line must still name its own request.
        answers: dict[str, httpx.Response] = {}

        def send(n: int) -> None:
            answers[f"req-{n}"] = http.post(
                f"/tables/{table.id}/commits",
                json=_commit(table, f"writer-{n}", 7, n),
                headers={"X-Request-ID": f"req-{n}"},
            )

        threads = [threading.Thread(target=send, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rejected = http.post(
            f"/tables/{table.id}/commits",
            json=_commit(table, "strict", 1, 9, baseSnapshotId=1),
            headers={"X-Request-ID": "req-strict"},
        )
        unnamed = http.get("/tables")
    assert rejected.status_code == 409
    assert {rid: r.headers["x-request-id"] for rid, r in answers.items()} == {rid: rid for rid in answers}
    generated = unnamed.headers["x-request-id"]
    assert len(generated) == 32

    time.sleep(0.2)  # the access line is written after the answer went out
    lines = _log_lines(log)
    commits = {line["request_id"]: line for line in lines if line["logger"] == "coordinator.commits"}
    for n in range(4):
        line = commits[f"req-{n}"]
        snapshot_ids = [s["id"] for s in answers[f"req-{n}"].json()["snapshots"]]
        assert line["message"] == "commit committed"
        assert (line["table"], line["commitUser"], line["identifier"]) == (table.id, f"writer-{n}", 7)
        assert line["snapshotIds"] == snapshot_ids
        assert line["outcome"] == "committed"
        assert line["timings"]["total"] > 0
    assert sorted(commits[f"req-{n}"]["snapshotIds"][0] for n in range(4)) == [1, 2, 3, 4]
    strict = commits["req-strict"]
    assert (strict["outcome"], strict["conflictType"], strict["level"]) == (
        "rejected",
        "BASE_SNAPSHOT_MOVED",
        "WARNING",
    )
    access = [line for line in lines if line["logger"] == "coordinator.access"]
    posted = {line["request_id"]: line for line in access if line["method"] == "POST"}
    assert posted["req-0"]["status"] == 201
    assert posted["req-0"]["path"] == f"/tables/{table.id}/commits"
    assert posted["req-strict"]["status"] == 409
    assert any(line["request_id"] == generated and line["path"] == "/tables" for line in access)


YOUNG_COLLECTIONS_AT_MOST = 5
"""Over COMMITS small commits a served process settled for serving makes at most this many collections of
its youngest generation; with CPython's defaults it makes one every few commits."""
COMMITS = 150


def test_a_served_process_rarely_collects_garbage(served: tuple[str, Path]) -> None:
    url, _ = served
    with httpx.Client(base_url=url, timeout=60) as http:
        table = create_table(http, "db", "gc", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"])

        def collections() -> tuple[float, float]:
            samples = _samples(http.get("/metrics").text)
            name = "python_gc_collections_total"
            return _value(samples, name, generation="0"), _value(samples, name, generation="1")

        young, older = collections()
        for n in range(COMMITS):
            answer = http.post(f"/tables/{table.id}/commits", json=_commit(table, "gc", n, n))
            assert answer.status_code == 201, answer.text
        young_after, older_after = collections()
    assert young_after - young <= YOUNG_COLLECTIONS_AT_MOST
    assert older_after == older
