"""Flink SQL with Paimon's connector (paimon-flink-2.0 2.0.0, PyFlink 2.0.2) through a real coordinator
(uvicorn on loopback): Paimon's REST catalog at the coordinator, CREATE TABLE of primary-key tables
(`bucket` N, changelog producers `input` and `lookup`) and an append-only one, a batch INSERT, and a
streaming INSERT from a bounded sequence with a checkpoint a second. pypaimon reads the tables back
through the same catalog and is compared with the model of the input."""

from __future__ import annotations

from pathlib import Path

from tests.flink.jobs import (
    END_OF_INPUT,
    FlinkJob,
    catalog_sql,
    checkpointing,
    history,
    latest_by_key,
    log_problems,
    streaming_inserts,
    streaming_tables,
    table_rows,
)
from tests.support import REPO
from tests.support.served import LiveServer

ROWS = 300
RATE = 75  # rows a second: four seconds of input, so several checkpoints commit


def test_batch_and_streaming_inserts_through_the_coordinator(live_server: LiveServer, tmp_path: Path) -> None:
    url = live_server.url
    batch = FlinkJob(
        {
            "mode": "batch",
            "statements": [catalog_sql(url), *streaming_tables("flinksql")],
            # Keys the stream never writes, so the batch's rows must survive it unchanged.
            "inserts": ["INSERT INTO lake.flinksql.latest VALUES (1000, -1), (1001, -2), (1002, -3)"],
        },
        tmp_path / "batch.log",
    )
    batch.finished()
    assert table_rows(url, "flinksql.latest") == [{"k": 1000 + i, "v": -1 - i} for i in range(3)]
    (batch_commit,) = history(url, "flinksql.latest")
    assert batch_commit["outcome"] == "committed"
    assert batch_commit["identifier"] == END_OF_INPUT  # a batch job commits once, at the end

    source, inserts = streaming_inserts("flinksql", ROWS, RATE)
    stream = FlinkJob(
        {
            "mode": "streaming",
            "config": checkpointing(tmp_path / "checkpoints"),
            # SHOW TABLES lists views too (an empty list here, not a 501).
            "statements": [catalog_sql(url), "SHOW TABLES IN lake.flinksql", *source],
            "inserts": inserts,
        },
        tmp_path / "stream.log",
    )
    stream.finished()

    streamed_rows = [{"k": k, "v": v} for k, v in latest_by_key(ROWS).items()]
    assert table_rows(url, "flinksql.latest") == ordered(
        streamed_rows + [{"k": 1000 + i, "v": -1 - i} for i in range(3)]
    )
    assert table_rows(url, "flinksql.looked") == ordered(streamed_rows)
    assert log_problems([r["seq"] for r in table_rows(url, "flinksql.log")], ROWS) == {
        "doubled": [],
        "missing": [],
        "foreign": [],
    }
    for table in ("flinksql.latest", "flinksql.looked", "flinksql.log"):
        streamed = history(url, table)[1 if table == "flinksql.latest" else 0 :]  # after the batch's
        users = {c["commitUser"] for c in streamed}
        assert len(users) == 1, (table, users)  # one sink, one commit user
        assert batch_commit["commitUser"] not in users
        identifiers = [c["identifier"] for c in streamed]
        # One commit per checkpoint, in checkpoint order, then the end of the input.
        assert identifiers == sorted(set(identifiers)), (table, identifiers)
        assert identifiers[-1] == END_OF_INPUT, (table, identifiers)
        assert len(identifiers) >= 3, (table, identifiers)  # at least two checkpoints committed data
        assert {c["outcome"] for c in streamed} == {"committed"}, table


def readme_flink_sql() -> list[str]:
    """The statements of the README's Flink block, as a user pastes them into Flink's SQL client."""
    section = (REPO / "README.md").read_text().split("## Flink\n", 1)[1]
    block = section.split("```sql\n", 1)[1].split("```", 1)[0]
    return [statement.strip() for statement in block.split(";") if statement.strip()]


def test_the_readme_s_flink_sql_runs_as_pasted(live_server: LiveServer, tmp_path: Path) -> None:
    statements = [s.replace("http://127.0.0.1:8080", live_server.url) for s in readme_flink_sql()]
    assert any(live_server.url in s for s in statements)  # the block names the coordinator's URL
    job = FlinkJob(
        {
            "mode": "batch",
            "statements": [s for s in statements if not s.startswith("INSERT")],
            "inserts": [s for s in statements if s.startswith("INSERT")],
        },
        tmp_path / "readme.log",
    )
    job.finished()
    assert table_rows(live_server.url, "clickstream.clicks") == [
        {"user_id": 1, "clicks": 10},
        {"user_id": 2, "clicks": 20},
    ]


def ordered(rows: list[dict[str, int]]) -> list[dict[str, int]]:
    """In read_rows' order."""
    return sorted(rows, key=lambda r: tuple(str(v) for v in r.values()))
