"""GET /tables/{id}/sequence-numbers: what the Spark writer numbers its files after, against a real server."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from coordinator_client import AsyncCoordinatorClient, CoordinatorClient, NotFound
from coordinator_client.models import FileListResponse, SequenceNumbersResponse
from tests.support.paimon_files import PaimonTable, create_table, group_by_bucket
from tests.support.served import LiveServer

Highest = dict[tuple[str, int], int]


def _from_file_list(files: FileListResponse) -> Highest:
    """The answer computed the old way: the highest maxSequenceNumber over the full file list."""
    out: Highest = {}
    for f in files.files:
        key = (json.dumps(f.partition), f.bucket)
        out[key] = max(out.get(key, f.max_sequence_number), f.max_sequence_number)
    return out


def _highest(answer: SequenceNumbersResponse) -> Highest:
    keys = [(json.dumps(b.partition), b.bucket) for b in answer.buckets]
    assert len(set(keys)) == len(keys), "one entry per (partition, bucket)"
    return {(json.dumps(b.partition), b.bucket): b.max_sequence_number for b in answer.buckets}


def _commit(http: httpx.Client, table: PaimonTable, identifier: int, messages: list[dict[str, Any]]) -> None:
    body = {"commitUser": "writer", "identifier": identifier, "messages": messages}
    response = http.post(f"/tables/{table.id}/commits", json=body)
    assert response.status_code == 201, response.text


def _append(
    http: httpx.Client, table: PaimonTable, identifier: int, rows: list[dict[str, Any]], first: int
) -> list[dict[str, Any]]:
    """One primary-key file per (partition, bucket) of `rows`, numbered from `first`; returns their JSON."""
    files, messages = [], []
    for group in group_by_bucket(table, rows).values():
        meta = table.pk_file(group, first_sequence=first)
        first += len(group)
        files.append(meta)
        messages.append(table.message(group[0], newFiles=[meta]))
    _commit(http, table, identifier, messages)
    return files


def test_sequence_numbers_match_the_file_list_after_appends_and_a_compaction(
    live_server: LiveServer, http: httpx.Client
) -> None:
    table = create_table(
        http,
        "db",
        "seq",
        {"dt": "STRING NOT NULL", "id": "BIGINT NOT NULL", "v": "STRING"},
        partitionKeys=["dt"],
        primaryKeys=["dt", "id"],
        options={"bucket": "2"},
    )
    with CoordinatorClient(live_server.url, timeout=60) as client:
        empty = client.sequence_numbers(table.id)
        assert (empty.snapshot_id, empty.buckets) == (None, [])

        rows = [{"dt": dt, "id": i, "v": f"{dt}{i}"} for dt in ("a", "b") for i in range(8)]
        _append(http, table, 1, rows, first=0)
        updates = [{"dt": "a", "id": i, "v": "new"} for i in range(8)]
        _append(http, table, 2, updates, first=100)
        _append(http, table, 3, [{"dt": "b", "id": 1, "v": "newer"}], first=200)

        # Compact bucket `bucket` of partition a: its two files become one level-5 file numbered after 300.
        bucket = table.bucket(updates[0])
        before = [f for f in client.live_files(table.id, partition={"dt": "a"}).files if f.bucket == bucket]
        assert len(before) == 2
        merged = [r for r in updates if table.bucket(r) == bucket]
        after = table.pk_file(merged, first_sequence=300, level=5)
        message = table.message(
            merged[0],
            compactBefore=[f.to_data_file().model_dump(by_alias=True, exclude_none=True) for f in before],
            compactAfter=[after],
        )
        _commit(http, table, 4, [message])
        assert client.latest_snapshot(table.id).commit_kind == "COMPACT"

        answer = client.sequence_numbers(table.id)
        files = client.live_files(table.id)
        assert answer.snapshot_id == files.snapshot_id == 4
        expected = _from_file_list(files)
        assert _highest(answer) == expected
        a = json.dumps({"dt": "a"})
        assert expected[(a, bucket)] == 300 + len(merged) - 1  # the compacted file's
        other = 1 - bucket
        assert 100 <= expected[(a, other)] < 108  # the update's file, not the first commit's
        assert expected[(json.dumps({"dt": "b"}), table.bucket({"dt": "b", "id": 1}))] == 200
        assert len(expected) == 4

        only_a = client.sequence_numbers(table.id, partition={"dt": "a"})
        assert _highest(only_a) == {k: v for k, v in expected.items() if k[0] == a}
        assert client.sequence_numbers(table.id, partition={"dt": "nowhere"}).buckets == []

        with pytest.raises(NotFound) as missing:
            client.sequence_numbers("db.missing")
        assert missing.value.status_code == 404
        assert missing.value.code == "TABLE_NOT_FOUND"
    bad = http.get(f"/tables/{table.id}/sequence-numbers", params={"partition": "[1]"})
    assert bad.status_code == 422
    assert bad.json()["field"] == "partition"


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_async_client_asks_the_same(live_server: LiveServer, anyio_backend: str) -> None:
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        table = create_table(
            http,
            "db",
            "t",
            {"id": "BIGINT NOT NULL", "v": "STRING"},
            primaryKeys=["id"],
            options={"bucket": "1"},
        )
        _append(http, table, 1, [{"id": i, "v": "x"} for i in range(5)], first=10)
    async with AsyncCoordinatorClient(live_server.url, timeout=60) as client:
        answer = await client.sequence_numbers(table.id)
        assert [(b.partition, b.bucket, b.max_sequence_number) for b in answer.buckets] == [({}, 0, 14)]
        with pytest.raises(NotFound):
            await client.sequence_numbers("db.missing")
