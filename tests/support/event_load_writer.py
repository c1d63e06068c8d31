"""A writer of the event feed's load test as an OS process of its own:
`python -m tests.support.event_load_writer URLS WRITER COMMITS TABLE [TABLE...]`.

Each commit (commitUser `w<WRITER>`, identifiers 1..COMMITS) adds one file to the tables in turn; with
two tables or more every third commit is a transaction over all of them instead. It is sent to one
replica, and on no answer (a killed replica), a 5xx or a retryable 409 sent again as it was, to the
other: the service answers a resend from its record, so every commit ends acknowledged exactly once.
Each acknowledged change is printed as a JSON line [table, user, identifier, snapshots, kind, whether it
was answered from its record]. Once, it also sends a compaction of a file no snapshot holds, which the
service rejects (409, recorded in the history as rejected), and prints it as [table, user, identifier,
[], "rejected", false].
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import httpx

from tests.support import REPO
from tests.support.commits import append_commit, transaction_body
from tests.support.paimon_files import PaimonTable

GIVE_UP_SECONDS = 180.0
REJECTED = 1_000_000
"""The identifier of each writer's rejected commit."""


def send(clients: list[httpx.Client], path: str, body: dict[str, Any], first: int) -> dict[str, Any]:
    """POST until acknowledged, turning to the next replica after each failure."""
    deadline = time.monotonic() + GIVE_UP_SECONDS
    turn = first
    while time.monotonic() < deadline:
        client = clients[turn % len(clients)]
        turn += 1
        try:
            answer = client.post(path, json=body)
        except httpx.TransportError:
            time.sleep(0.2)
            continue
        if answer.status_code in (200, 201):
            acknowledged: dict[str, Any] = answer.json()
            return acknowledged
        retryable = answer.status_code == 409 and answer.json().get("conflict", {}).get("retryable")
        if answer.status_code in (429, 503) or answer.status_code >= 500 or retryable:
            time.sleep(0.2)
            continue
        raise SystemExit(f"{path}: {answer.status_code} {answer.text}")
    raise SystemExit(f"{path}: no answer in {GIVE_UP_SECONDS} s")


def main(urls: list[str], writer: int, commits: int, table_ids: list[str]) -> None:
    clients = [httpx.Client(base_url=url, timeout=60) for url in urls]
    tables = [PaimonTable(clients[0].get(f"/tables/{t}").json()) for t in table_ids]
    user = f"w{writer}"
    for i in range(1, commits + 1):
        rows = [{"dt": f"d{i % 3}", "id": writer * 100_000 + i}]
        if len(tables) > 1 and i % 3 == 0:
            changes = [(t, [t.append_message(rows)]) for t in tables]
            body = transaction_body(changes, user=user, identifier=i)
            answer = send(clients, "/transactions", body, writer + i)
            for part in answer["tables"]:
                ids = [s["id"] for s in part["snapshots"]]
                line = [part["table"], user, i, ids, "transaction", answer["deduplicated"]]
                print(json.dumps(line), flush=True)
        else:
            table = tables[i % len(tables)]
            body = append_commit(table, rows, user=user, identifier=i)
            answer = send(clients, f"/tables/{table.id}/commits", body, writer + i)
            ids = [s["id"] for s in answer["snapshots"]]
            print(json.dumps([table.id, user, i, ids, "commit", answer["deduplicated"]]), flush=True)
    rejected(clients[writer % len(clients)], tables[0], user)
    for client in clients:
        client.close()


def rejected(client: httpx.Client, table: PaimonTable, user: str) -> None:
    """A compaction of a file on storage that no snapshot ever added: a conflict, never an event."""
    rows = [{"dt": "gone", "id": -1}]
    never_added = table.append_file(rows)
    gone = {k: never_added[k] for k in ("fileName", "fileSize", "rowCount")}
    message = table.message(rows[0], compactBefore=[gone], compactAfter=[])
    body = {"commitUser": user, "identifier": REJECTED, "messages": [message]}
    for _ in range(50):
        try:
            answer = client.post(f"/tables/{table.id}/commits", json=body)
        except httpx.TransportError:
            time.sleep(0.2)
            continue
        if answer.status_code == 409 and not answer.json()["conflict"]["retryable"]:
            print(json.dumps([table.id, user, REJECTED, [], "rejected", False]), flush=True)
            return
        raise SystemExit(f"the rejected compaction: {answer.status_code} {answer.text}")
    raise SystemExit("the rejected compaction got no answer")


def start(urls: list[str], writer: int, commits: int, table_ids: list[str]) -> subprocess.Popen[str]:
    """The writer started as a process of its own, its output piped."""
    arguments = [",".join(urls), str(writer), str(commits), *table_ids]
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.event_load_writer", *arguments],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


if __name__ == "__main__":
    main(sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
