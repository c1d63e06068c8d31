"""One Flink SQL job, run by .venv-flink's Python (PyFlink 2.0.2), never imported by the suite's own venv.

PyFlink cannot share the suite's venv (its pins conflict, see requirements/flink.txt), so a test starts
this file as a process of its own: `python flink_job.py SPEC.json`. The spec says the mode (batch or
streaming), Flink's configuration (checkpoints, the state to restore from), the jars (Paimon's Flink
connector) and the SQL: `statements` run one by one (CREATE CATALOG, CREATE TABLE, ...), then `inserts`
run as one statement set, and the process waits for that job to end. Flink runs in this process's JVM
(a local mini-cluster), so killing this process group kills the job, as a crashed TaskManager would.

It prints `JOB <id>` once the job is submitted, so the test can find its checkpoints.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pyflink.table import EnvironmentSettings, TableEnvironment


def run(spec: dict[str, Any]) -> None:
    settings = (
        EnvironmentSettings.in_streaming_mode()
        if spec["mode"] == "streaming"
        else EnvironmentSettings.in_batch_mode()
    )
    env = TableEnvironment.create(settings)
    config = env.get_config()
    config.set("pipeline.jars", ";".join(Path(jar).resolve().as_uri() for jar in spec["jars"]))
    # One slot and parallelism 1: the source's order is the order rows reach the table, so the test's
    # model of the latest value per key is exact.
    config.set("parallelism.default", "1")
    for key, value in spec.get("config", {}).items():
        config.set(key, str(value))
    for statement in spec.get("statements", []):
        result = env.execute_sql(statement)
        result.wait()
        if statement.lstrip().upper().startswith("CALL"):
            # A procedure answers rows (sys.compact: the job it ran); printed for the test's log.
            with result.collect() as rows:
                for row in rows:
                    print(f"CALLED {row}", flush=True)
    inserts = spec.get("inserts", [])
    if not inserts:
        return
    statements = env.create_statement_set()
    for insert in inserts:
        statements.add_insert_sql(insert)
    result = statements.execute()
    client = result.get_job_client()
    if client is not None:
        print(f"JOB {client.get_job_id()}", flush=True)
    result.wait()
    print("DONE", flush=True)


if __name__ == "__main__":
    run(json.loads(Path(sys.argv[1]).read_text()))
