"""Flink jobs of the tests, seen from the suite's venv: what they run, how they are started, killed and
restarted, and what the tables must hold afterwards.

A job is `flink_job.py` run by .venv-flink's Python (`make flink` installs it and fetches the jars), in
a process group of its own: PyFlink's JVM (the mini-cluster running the job) is a child of that Python,
so a SIGKILL of the group is a crash of the whole job, with no chance to clean up or commit.

The streaming source is Flink's `datagen` in `sequence` mode: the numbers 1..N at a fixed rate, its
position part of every checkpoint, so a job restored from a checkpoint goes on where that checkpoint
was. Each number `seq` is written to three tables of one statement set: two primary-key tables keyed
`seq % KEYS` (changelog producers `input` and `lookup`), whose every key must end with the largest
`seq` of its residue, and an append-only log of `seq`, which must hold 1..N each exactly once: a
checkpoint committed twice doubles rows there, one lost leaves a gap.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import httpx

from tests.support import REPO
from tests.support.rest_writers import CATALOG_NAME, read_rows, rest_catalog

FLINK_PYTHON = REPO / ".venv-flink" / "bin" / "python"
JARS = [
    REPO / ".cache" / "jars" / "paimon-flink-2.0-2.0.0.jar",
    REPO / ".cache" / "jars" / "flink-shaded-hadoop-2-uber-2.8.3-10.0.jar",
]
JOB = Path(__file__).parent / "flink_job.py"
KEYS = 40
"""Keys of the primary-key tables: each is written many times, so the latest value is a real check."""
SINKS = ("latest", "looked", "log")
"""The tables a streaming job writes: primary keys with changelog producers input and lookup, and a log."""
END_OF_INPUT = 2**63 - 1
"""The identifier of the commit Paimon's Flink sink makes when a bounded input ends (Long.MAX_VALUE)."""


def catalog_sql(url: str, token: str = "flink-token") -> str:
    """The catalog as a user writes it (docs/flink.md): Paimon's REST catalog at the coordinator."""
    return (
        f"CREATE CATALOG lake WITH ('type'='paimon', 'metastore'='rest', 'uri'='{url}', "
        f"'warehouse'='{CATALOG_NAME}', 'token.provider'='bear', 'token'='{token}')"
    )


def streaming_tables(database: str, sinks: tuple[str, ...] = SINKS, **options: str) -> list[str]:
    """CREATE DATABASE and CREATE TABLE of `sinks` (of SINKS); `options`: more table options."""
    extra = "".join(f", '{k}'='{v}'" for k, v in options.items())
    ddl = {
        "latest": f"(k INT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket'='2', "
        f"'changelog-producer'='input'{extra})",
        "looked": f"(k INT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket'='3', "
        f"'changelog-producer'='lookup'{extra})",
        "log": f"(seq BIGINT) WITH ('bucket'='-1'{extra})",
    }
    return [f"CREATE DATABASE IF NOT EXISTS lake.{database}"] + [
        f"CREATE TABLE IF NOT EXISTS lake.{database}.{sink} {ddl[sink]}" for sink in sinks
    ]


def streaming_inserts(
    database: str, rows: int, rate: int, sinks: tuple[str, ...] = SINKS
) -> tuple[list[str], list[str]]:
    """(statements, inserts) of the streaming job: the sequence source and its sinks."""
    source = (
        "CREATE TEMPORARY TABLE src (seq BIGINT) WITH ('connector'='datagen', "
        f"'rows-per-second'='{rate}', 'fields.seq.kind'='sequence', 'fields.seq.start'='1', "
        f"'fields.seq.end'='{rows}')"
    )
    select = {
        "latest": f"CAST(seq % {KEYS} AS INT), seq",
        "looked": f"CAST(seq % {KEYS} AS INT), seq",
        "log": "seq",
    }
    return [source], [f"INSERT INTO lake.{database}.{sink} SELECT {select[sink]} FROM src" for sink in sinks]


def checkpointing(folder: Path, restore: Path | None = None) -> dict[str, str]:
    """A checkpoint a second, externalized and retained (all of them, so the test can see which
    completed); `restore`: the retained checkpoint the job starts from."""
    config = {
        "execution.checkpointing.interval": "1s",
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "execution.checkpointing.dir": folder.as_uri(),
        "execution.checkpointing.num-retained": "1000",
        "state.backend.type": "hashmap",
    }
    if restore is not None:
        config["execution.state-recovery.path"] = restore.as_uri()
    return config


@dataclass
class FlinkJob:
    """One run of flink_job.py: started at construction, its output in `log`."""

    spec: dict[str, Any]
    log: Path
    process: subprocess.Popen[bytes] = field(init=False)
    started: ClassVar[list[FlinkJob]] = []
    """Every job started, so the fixture `no_job_left` kills what a failing test left running."""

    def __post_init__(self) -> None:
        missing = [str(p) for p in (FLINK_PYTHON, *JARS) if not p.exists()]
        assert not missing, f"run `make flink` first (PyFlink's venv and the jars): missing {missing}"
        spec_file = self.log.with_suffix(".json")
        spec_file.write_text(json.dumps({"jars": [str(j) for j in JARS], **self.spec}))
        self._sink = self.log.open("wb")
        self.process = subprocess.Popen(
            [str(FLINK_PYTHON), str(JOB), str(spec_file)],
            stdout=self._sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the JVM goes with it on a kill
            env={k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "VIRTUAL_ENV"))},
        )
        FlinkJob.started.append(self)

    def finished(self, seconds: float = 240) -> None:
        """Waits for the job to end, and fails with its log unless it ended well."""
        try:
            code = self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the Flink job did not end in {seconds} s:\n{self.tail()}") from None
        self._sink.close()
        assert code == 0, f"the Flink job failed ({code}):\n{self.tail()}"
        assert "DONE" in self.log.read_text() or not self.spec.get("inserts"), self.tail()

    def kill(self) -> None:
        """SIGKILL the job's whole process group (Python and the JVM running the job)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self._sink.close()

    def tail(self) -> str:
        lines = [
            line
            for line in self.log.read_text(errors="replace").splitlines()
            if not line.lstrip().startswith("at ")
        ]
        return "\n".join(lines[-40:])


def completed_checkpoints(folder: Path) -> dict[int, Path]:
    """Checkpoint id -> folder of every checkpoint retained under `folder` whose metadata was written
    (Flink writes `_metadata` last: a checkpoint without it did not complete)."""
    found: dict[int, Path] = {}
    for metadata in folder.glob("*/chk-*/_metadata"):
        match = re.fullmatch(r"chk-(\d+)", metadata.parent.name)
        assert match is not None
        found[int(match.group(1))] = metadata.parent
    return found


def history(url: str, table: str) -> list[dict[str, Any]]:
    """The table's commits, oldest first (GET /tables/{id}/commits); none before it exists."""
    answer = httpx.get(f"{url}/tables/{table}/commits", params={"limit": 1000}, timeout=30)
    if answer.status_code == 404:
        return []  # the job has not created it yet
    answer.raise_for_status()
    commits: list[dict[str, Any]] = answer.json()["commits"]
    return commits[::-1]


def table_rows(url: str, table: str) -> list[dict[str, Any]]:
    """What pypaimon reads of the table, through the coordinator's REST catalog."""
    return read_rows(rest_catalog(url).get_table(table))


def latest_by_key(rows: int) -> dict[int, int]:
    """The model of a primary-key table after the sequence 1..rows: each key's largest seq."""
    return {seq % KEYS: seq for seq in range(1, rows + 1)}


def log_problems(seqs: list[int], rows: int) -> dict[str, list[int]]:
    """How the append-only log differs from 1..rows each once: doubled and missing numbers."""
    counts = Counter(seqs)
    return {
        "doubled": sorted(s for s, n in counts.items() if n > 1),
        "missing": sorted(set(range(1, rows + 1)) - set(counts)),
        "foreign": sorted(s for s in counts if not 1 <= s <= rows),
    }
