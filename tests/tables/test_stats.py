"""Table sizes come from the database: after appends, a compaction, an overwrite, a snapshot adopted from
an outside writer and a rollback, the overview and the table list give what reading the table gives;
and they give it with the table's manifests out of reach, on a service that just started.

The truth is read from storage: the live files the service's own file listing reads from the manifests,
and the rows pypaimon reads.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from alembic import command
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from coordinator.app import create_app
from coordinator.db.migrate import alembic_config
from coordinator.services import Services
from coordinator.settings import Settings
from tests.support.commits import commit
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows
from tests.support.served import LiveServer

FIELDS = {"dt": "STRING", "id": "BIGINT", "v": "STRING"}


def rows(dt: str, ids: range) -> list[dict[str, Any]]:
    return [{"dt": dt, "id": i, "v": f"v{i}"} for i in ids]


def append(api: TestClient, table: PaimonTable, data: list[dict[str, Any]]) -> dict[str, Any]:
    new = table.append_file(data)
    commit(api, table, [table.message(data[0], newFiles=[new])])
    return new


def truth(api: httpx.Client, warehouse: Path, table: PaimonTable) -> tuple[int, int, int, int]:
    """(latest snapshot, records, files, bytes) read from storage: the manifests and pypaimon."""
    files = api.get(f"/tables/{table.id}/files").json()
    assert files["snapshotId"] is not None
    live = files["files"]
    records = len(pypaimon_rows(warehouse, table.id))
    assert records == sum(f["rowCount"] for f in live)  # an append table: totalRecordCount is its rows
    return files["snapshotId"], records, len(live), sum(f["fileSize"] for f in live)


def recorded(api: httpx.Client, table: PaimonTable) -> tuple[int, int, int, int]:
    """What the overview and the table list say, which must agree."""
    overview = api.get("/ops/overview", params={"name_prefix": table.id.split(".")[1]}).json()
    (row,) = [t for t in overview["tables"] if t["tableId"] == table.id]
    listed = api.get(f"/tables/{table.id}").json()
    assert (listed["totalRecordCount"], listed["fileCount"], listed["fileBytes"]) == (
        row["totalRecordCount"],
        row["fileCount"],
        row["fileBytes"],
    )
    return row["latestSnapshotId"], row["totalRecordCount"], row["fileCount"], row["fileBytes"]


def outside_commit(warehouse: Path, table: PaimonTable, data: list[dict[str, Any]]) -> None:
    """pypaimon commits straight to storage, as a writer that bypasses the coordinator would."""
    from pypaimon import CatalogFactory

    outside = CatalogFactory.create({"warehouse": str(warehouse)}).get_table(table.id)
    builder = outside.new_batch_write_builder()
    write = builder.new_write()
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
    write.write_arrow(pa.Table.from_pylist(data, schema=schema))
    builder.new_commit().commit(write.prepare_commit())
    write.close()


@pytest.fixture
def manifests_out_of_reach() -> Iterator[list[Path]]:
    """Folders moved aside for a test; put back afterwards."""
    moved: list[Path] = []
    yield moved
    for folder in moved:
        folder.with_name(folder.name + ".away").rename(folder)


def test_sizes_follow_every_kind_of_change_and_need_no_storage_to_answer(
    api: TestClient, settings: Settings, warehouse: Path, manifests_out_of_reach: list[Path]
) -> None:
    table = create_table(api, "stats", f"t_{uuid.uuid4().hex[:6]}", FIELDS, partitionKeys=["dt"])
    assert recorded(api, table) == (0, 0, 0, 0)

    first = append(api, table, rows("a", range(3)))
    second = append(api, table, rows("a", range(3, 8)))
    append(api, table, rows("b", range(8, 10)))
    assert recorded(api, table) == truth(api, warehouse, table)

    # A compaction: two files of partition a become one.
    merged = table.append_file(rows("a", range(8)))
    compaction = table.message(rows("a", range(1))[0], compactBefore=[first, second], compactAfter=[merged])
    assert [s["commitKind"] for s in commit(api, table, [compaction])] == ["COMPACT"]
    assert recorded(api, table) == truth(api, warehouse, table)

    # An overwrite of partition b.
    replacement = rows("b", range(100, 104))
    new = table.append_file(replacement)
    overwrite = {"mode": "static", "partition": {"dt": "b"}}
    message = table.message(replacement[0], newFiles=[new])
    assert [s["commitKind"] for s in commit(api, table, [message], overwrite=overwrite)] == ["OVERWRITE"]
    assert recorded(api, table) == truth(api, warehouse, table)
    overwritten = recorded(api, table)[0]

    # A snapshot an outside writer published: adopted by the next commit, from its delta alone.
    outside_commit(warehouse, table, rows("c", range(200, 206)))
    append(api, table, rows("d", range(300, 301)))
    assert recorded(api, table)[0] == overwritten + 2
    assert recorded(api, table) == truth(api, warehouse, table)

    # A rollback to the overwrite.
    response = api.post(f"/tables/{table.id}/rollback", json={"snapshotId": overwritten})
    assert response.status_code == 200, response.text
    assert recorded(api, table) == truth(api, warehouse, table)
    assert recorded(api, table)[0] == overwritten
    expected = recorded(api, table)

    # Out of reach of every reader: the table's manifests. A freshly started service (no cache of
    # anything) still answers the overview and the table list, from the database.
    manifest_dir = table.path / "manifest"
    manifest_dir.rename(manifest_dir.with_name("manifest.away"))
    manifests_out_of_reach.append(manifest_dir)
    with TestClient(create_app(settings)) as restarted:
        assert recorded(restarted, table) == expected
        listed = restarted.get("/tables", params={"database": "stats"}).json()["tables"]
        assert [(t["totalRecordCount"], t["fileCount"], t["fileBytes"]) for t in listed] == [expected[1:]]
        overview = restarted.get("/ops/overview").json()
        assert overview["totals"]["fileCount"] == expected[2]
        assert overview["totals"]["fileBytes"] == expected[3]
        # ...while anything that does read the manifests fails: they really are out of reach.
        with pytest.raises(FileNotFoundError):
            restarted.get(f"/tables/{table.id}/files")


def test_drop_takes_the_size_out_of_the_totals(api: TestClient) -> None:
    table = create_table(api, "stats", "dropped", FIELDS, partitionKeys=["dt"])
    append(api, table, rows("a", range(5)))
    assert api.get("/ops/overview").json()["totals"]["totalRecordCount"] == 5
    assert api.delete(f"/tables/{table.id}").status_code == 204
    totals = api.get("/ops/overview").json()["totals"]
    assert (totals["tables"], totals["totalRecordCount"], totals["fileCount"], totals["fileBytes"]) == (
        0,
        0,
        0,
        0,
    )


def test_rows_older_than_0005_are_unknown_then_backfilled_once_at_start(
    api: TestClient, settings: Settings, database_url: str, warehouse: Path
) -> None:
    """0005 reads no storage: a table with snapshots gets NULL sizes (unknown), a table without gets
    zeros; the service's start-up backfill then reads each unknown table once. A commit on a table whose
    size is unknown keeps it unknown (and carries the record count) until the backfill has run."""
    table = create_table(api, "old", "t", FIELDS, partitionKeys=["dt"])
    create_table(api, "old", "empty", FIELDS, partitionKeys=["dt"])
    for n in range(3):
        append(api, table, rows("a", range(10 * n, 10 * n + 4)))
    expected = recorded(api, table)

    config = alembic_config(database_url)
    command.downgrade(config, "0004")
    command.upgrade(config, "head")
    engine = create_engine(database_url)
    with engine.connect() as conn:
        stored = conn.execute(
            text("SELECT id, total_record_count, file_count, file_bytes, last_commit_at IS NOT NULL "
                 "FROM paimon_tables ORDER BY id")
        ).all()  # fmt: skip
    engine.dispose()
    assert [tuple(r) for r in stored] == [("old.empty", 0, 0, 0, False), ("old.t", None, None, None, True)]

    # The running service commits on top of an unknown size: the record count is known, the files not.
    append(api, table, rows("b", range(100, 102)))
    after_commit = api.get(f"/tables/{table.id}").json()
    assert (after_commit["totalRecordCount"], after_commit["fileCount"], after_commit["fileBytes"]) == (
        expected[1] + 2,
        None,
        None,
    )
    expected = truth(api, warehouse, table)

    services = Services.start(settings)  # backfills on a thread of its own
    try:
        services.backfill.wait()
        with TestClient(create_app(settings)) as restarted:
            assert recorded(restarted, table) == expected
            assert restarted.get("/ops/overview").json()["totals"]["unknown"] == 0
    finally:
        services.close()


def test_group_commits_move_the_size_by_every_member(
    live_server: LiveServer, warehouse: Path, settings: Settings
) -> None:
    """Writers racing for one table are committed in groups (one commit point for several snapshots):
    the size moves by all of their deltas."""
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        table = create_table(http, "stats", "raced", FIELDS, partitionKeys=["dt"])

        def write(k: int) -> list[int]:
            sizes = []
            with httpx.Client(base_url=live_server.url, timeout=60) as own:
                for j in range(4):
                    data = rows(f"p{k}", range(100 * k + 10 * j, 100 * k + 10 * j + 3))
                    message = table.append_message(data)
                    body = {"commitUser": f"w{k}", "identifier": j + 1, "messages": [message]}
                    response = own.post(f"/tables/{table.id}/commits", json=body)
                    assert response.status_code == 201, response.text
                    sizes.append(response.json()["groupSize"])
            return sizes

        with ThreadPoolExecutor(8) as pool:
            group_sizes = [size for sizes in pool.map(write, range(8)) for size in sizes]
        assert max(group_sizes) > 1  # some commit points recorded several snapshots
        got = recorded(http, table)
        assert got == truth(http, warehouse, table)
        assert got[1:3] == (8 * 4 * 3, 8 * 4)
