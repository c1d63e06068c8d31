"""One location, one table; a drop never takes another table's files.

A folder registered under two ids gave two locks and two head pointers over one snapshot folder, and a
drop (which purged by default) deleted the files the other id still served. Now creation and
registration refuse a folder another table's folder is, encloses or lies inside; a drop keeps the files
unless asked to purge, and purge deletes only the folder the coordinator made for a created table.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from alembic import command
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from coordinator.app import create_app
from coordinator.db.migrate import alembic_config, upgrade
from coordinator.domain.locations import location_key
from coordinator.settings import Settings
from tests.support.commits import commit
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows, sorted_rows, table_request
from tests.support.served import LiveServer

FIELDS = {"dt": "STRING", "id": "BIGINT"}


def listing(root: Path) -> dict[str, str]:
    """Every folder and file under `root`, files with the hash of their bytes: storage before and after."""
    return {
        str(p.relative_to(root)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }


def append(api: TestClient, table: PaimonTable, ids: range, dt: str = "a") -> int:
    rows = [{"dt": dt, "id": i} for i in ids]
    snapshots = commit(api, table, [table.append_message(rows)])
    return int(snapshots[-1]["id"])


def register(api: TestClient | httpx.Client, table_id: str, location: str) -> httpx.Response:
    database, name = table_id.split(".")
    return api.post("/tables", json={"database": database, "name": name, "location": location})


def paimon_table_at(folder: Path, like: PaimonTable) -> None:
    """A Paimon table (schema files only) at `folder`, with the schema of `like`: what a second writer
    would have made there."""
    shutil.copytree(like.schema_dir, folder / "schema")


def table_ids(api: TestClient | httpx.Client) -> list[str]:
    return [t["id"] for t in api.get("/tables").json()["tables"]]


# ---------------------------------------------------------------- registration and creation refuse


@pytest.mark.parametrize(
    "spelling",
    [
        "{loc}",
        "{loc}/",
        "{loc}//",
        "file://{loc}",
        "file://{loc}/",
        "file:{loc}",
        "file://localhost{loc}",
        "{warehouse}//db.db///t",
        "{warehouse}/db.db/./x/../t",
    ],
)
def test_the_folder_of_a_table_cannot_be_registered_under_another_id(
    api: TestClient, warehouse: Path, spelling: str
) -> None:
    table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
    append(api, table, range(3))
    before = listing(warehouse)

    location = spelling.format(loc=table.location, warehouse=warehouse)
    refused = register(api, "other.t", location)

    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert (body["code"], body["field"]) == ("LOCATION_IN_USE", "location")
    assert "db.t" in body["message"]
    assert table_ids(api) == ["db.t"]
    assert api.get("/tables/other.t").status_code == 404
    assert listing(warehouse) == before


def test_a_folder_inside_or_around_a_table_cannot_be_registered(api: TestClient, warehouse: Path) -> None:
    table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
    append(api, table, range(3))
    # Real Paimon tables (schema files) inside the table's folder, around it, and beside it.
    inner, outer, beside = table.path / "inner", warehouse / "db.db", warehouse / "db.db" / "t2"
    for folder in (inner, outer, beside):
        paimon_table_at(folder, table)
    before = listing(warehouse)

    inside = register(api, "x.inner", str(inner))
    around = register(api, "x.outer", str(outer) + "/")

    for refused, relation in ((inside, "lies inside"), (around, "encloses")):
        assert refused.status_code == 409, refused.text
        assert refused.json()["code"] == "LOCATION_IN_USE"
        assert relation in refused.json()["message"]
        assert "table db.t" in refused.json()["message"]
    assert table_ids(api) == ["db.t"]
    assert listing(warehouse) == before
    # t2 starts with t's name but is not inside t: segment by segment, it is a folder of its own.
    assert register(api, "x.beside", str(beside)).status_code == 201
    # The refusals were about db.t's folder: once db.t is forgotten, the same requests succeed.
    assert api.delete("/tables/db.t").status_code == 204
    assert register(api, "x.inner", str(inner)).status_code == 201


def test_creating_a_table_inside_a_registered_one_is_refused(api: TestClient, warehouse: Path) -> None:
    """A created table's folder is <warehouse>/<db>.db/<name>; a table registered at <warehouse>/<db>.db
    owns it already."""
    template = create_table(api, "tmpl", "t", FIELDS)
    paimon_table_at(warehouse / "sales.db", template)
    assert register(api, "ops.sales", str(warehouse / "sales.db")).status_code == 201
    before = listing(warehouse)

    refused = api.post("/tables", json=table_request("sales", "orders", FIELDS))

    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "LOCATION_IN_USE"
    assert "ops.sales" in refused.json()["message"]
    assert sorted(table_ids(api)) == ["ops.sales", "tmpl.t"]
    assert listing(warehouse) == before  # no schema-0 written into the registered table's folder


def test_the_root_of_a_filesystem_and_an_empty_location_are_never_a_table(api: TestClient) -> None:
    for location in ("/", "file:///", "", "  "):
        refused = register(api, "x.root", location)
        assert refused.status_code == 422, (location, refused.text)
        assert refused.json()["field"] == "location"
    assert table_ids(api) == []


# ---------------------------------------------------------------- drop and purge


def test_a_second_coordinator_dropping_its_registration_leaves_the_table_to_the_first(
    api: TestClient, warehouse: Path, tmp_path: Path
) -> None:
    """Two coordinators (two metadata databases) on one warehouse: the first created sales.orders, the
    second registered its folder to serve it as well. The second one's drop, purge or not, must not take
    the table from under the first."""
    table = create_table(api, "sales", "orders", FIELDS, partitionKeys=["dt"])
    append(api, table, range(3))
    second = Settings(database_url=f"sqlite:///{tmp_path}/second.db", warehouse=str(warehouse))
    with TestClient(create_app(second)) as other:
        registered = register(other, "mirror.orders", str(table.location))
        assert registered.status_code == 201, registered.text
        before = listing(warehouse)

        purge = other.delete("/tables/mirror.orders", params={"purge": "true"})
        assert purge.status_code == 409, purge.text
        assert (purge.json()["code"], purge.json()["field"]) == ("PURGE_REFUSED", "purge")
        assert table_ids(other) == ["mirror.orders"]  # nothing changed, not even the row
        assert listing(warehouse) == before

        assert other.delete("/tables/mirror.orders").status_code == 204
        assert table_ids(other) == []
        assert listing(warehouse) == before

    # The first coordinator's table still reads and commits, and pypaimon reads every row.
    assert append(api, table, range(3, 5), dt="b") == 2
    files = api.get(f"/tables/{table.id}/files").json()
    assert files["snapshotId"] == 2
    assert all(Path(f["path"]).is_file() for f in files["files"])
    expected = [{"dt": "a", "id": i} for i in range(3)] + [{"dt": "b", "id": i} for i in range(3, 5)]
    assert pypaimon_rows(warehouse, "sales.orders") == sorted_rows(expected)


def test_a_drop_keeps_the_files_by_default(api: TestClient, warehouse: Path) -> None:
    table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
    append(api, table, range(3))
    before = listing(warehouse)

    assert api.delete("/tables/db.t").status_code == 204

    assert api.get("/tables/db.t").status_code == 404
    assert listing(warehouse) == before
    # ...and the folder can be registered again, with its history.
    again = register(api, "db.t", str(table.location))
    assert again.status_code == 201
    assert again.json()["latestSnapshotId"] == 1


def test_purge_deletes_exactly_the_folder_of_a_created_table(api: TestClient, warehouse: Path) -> None:
    table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
    append(api, table, range(3))
    beside = create_table(api, "db", "t2", FIELDS, partitionKeys=["dt"])  # a name t is a prefix of
    append(api, beside, range(2))
    (warehouse / "db.db" / "t.notes").write_text("not the table's")
    before = listing(warehouse)

    assert api.delete("/tables/db.t", params={"purge": "true"}).status_code == 204

    gone = {k for k in before if k == "db.db/t" or k.startswith("db.db/t/")}
    assert gone
    assert not table.path.exists()
    assert listing(warehouse) == {k: v for k, v in before.items() if k not in gone}
    assert table_ids(api) == ["db.t2"]
    assert append(api, beside, range(2, 4)) == 2


def test_purge_of_a_registered_table_is_refused_and_changes_nothing(api: TestClient, warehouse: Path) -> None:
    """pypaimon made found.t in the warehouse, in the very folder the coordinator would have made for
    that id; registered, it is still not the coordinator's to delete."""
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("found", False)
    arrow_schema = pa.schema([("dt", pa.string()), ("id", pa.int64())])
    catalog.create_table("found.t", Schema.from_pyarrow_schema(arrow_schema, partition_keys=["dt"]), False)
    builder = catalog.get_table("found.t").new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(pa.Table.from_pylist([{"dt": "a", "id": 0}], schema=arrow_schema))
    builder.new_commit().commit(write.prepare_commit())
    write.close()
    registered = register(api, "found.t", str(warehouse / "found.db" / "t"))
    assert registered.status_code == 201, registered.text
    before = listing(warehouse)

    refused = api.delete("/tables/found.t", params={"purge": "true"})

    assert refused.status_code == 409, refused.text
    assert (refused.json()["code"], refused.json()["field"]) == ("PURGE_REFUSED", "purge")
    assert "registered" in refused.json()["message"]
    assert listing(warehouse) == before
    assert api.get("/tables/found.t").json()["latestSnapshotId"] == 1
    assert append(api, PaimonTable(registered.json()), range(1, 2)) == 2
    assert pypaimon_rows(warehouse, "found.t") == sorted_rows([{"dt": "a", "id": 0}, {"dt": "a", "id": 1}])


@pytest.mark.parametrize("location", ["{warehouse}", "", "{warehouse}/db.db", "{warehouse}/elsewhere/t"])
def test_purge_never_reaches_outside_the_folder_made_for_the_table(
    api: TestClient, warehouse: Path, database_url: str, location: str
) -> None:
    """A row whose location is not the folder create() made for it (tampered with, or from an earlier
    warehouse setting) is never purged, even when it says `created`."""
    table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
    append(api, table, range(3))
    create_table(api, "db", "u", FIELDS)
    (warehouse / "elsewhere" / "t").mkdir(parents=True)
    moved = location.format(warehouse=warehouse)
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE paimon_tables SET location = :loc, location_key = NULL WHERE id = 'db.t'"),
            {"loc": moved},
        )
    engine.dispose()
    before = listing(warehouse)

    refused = api.delete("/tables/db.t", params={"purge": "true"})

    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "PURGE_REFUSED"
    assert listing(warehouse) == before
    assert sorted(table_ids(api)) == ["db.t", "db.u"]


def test_purge_refuses_a_folder_another_table_lives_in(
    api: TestClient, warehouse: Path, database_url: str
) -> None:
    """Rows recorded before revision 0007 may nest (a table registered inside a created one's folder);
    purging the outer one would take the inner one's files."""
    table = create_table(api, "db", "t", FIELDS, partitionKeys=["dt"])
    append(api, table, range(3))
    paimon_table_at(table.path / "inner", table)
    paimon_table_at(warehouse / "x" / "inner", table)
    assert register(api, "x.inner", str(warehouse / "x" / "inner")).status_code == 201
    nested = str(table.path / "inner")
    engine = create_engine(database_url)
    with engine.begin() as conn:  # as an older coordinator would have recorded it
        conn.execute(
            text("UPDATE paimon_tables SET location = :loc, location_key = :key WHERE id = 'x.inner'"),
            {"loc": nested, "key": location_key(nested)},
        )
    engine.dispose()
    before = listing(warehouse)

    refused = api.delete("/tables/db.t", params={"purge": "true"})

    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "PURGE_REFUSED"
    assert "x.inner" in refused.json()["message"]
    assert listing(warehouse) == before
    assert sorted(table_ids(api)) == ["db.t", "x.inner"]


# ---------------------------------------------------------------- races and revision 0007


def test_two_registrations_of_one_folder_racing_end_with_one_table(
    http: httpx.Client, live_server: LiveServer, warehouse: Path
) -> None:
    template = create_table(http, "tmpl", "t", FIELDS)
    rounds = 6
    for n in range(rounds):
        paimon_table_at(warehouse / "race" / f"t{n}", template)
    answers: list[tuple[int, str, int]] = []
    barrier = threading.Barrier(2)

    def register_as(n: int, who: str) -> None:
        with httpx.Client(base_url=live_server.url, timeout=60) as client:
            barrier.wait()
            response = register(client, f"{who}.t{n}", str(warehouse / "race" / f"t{n}"))
        answers.append((n, who, response.status_code))

    for n in range(rounds):
        threads = [threading.Thread(target=register_as, args=(n, who)) for who in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)

    for n in range(rounds):
        codes = sorted(code for m, _, code in answers if m == n)
        assert codes == [201, 409], (n, answers)
    owners = [t for t in table_ids(http) if t != "tmpl.t"]
    assert len(owners) == rounds
    assert sorted(t.split(".")[1] for t in owners) == [f"t{n}" for n in range(rounds)]


@pytest.fixture
def back_at_head(database_url: str) -> Iterator[str]:
    """The test's database, which the test may downgrade: at head again afterwards, whatever happens
    (the PostgreSQL database serves the whole session)."""
    try:
        yield database_url
    finally:
        upgrade(database_url)


def test_revision_0007_keys_tables_that_already_shared_a_folder(
    settings: Settings, warehouse: Path, back_at_head: str
) -> None:
    """Before 0007 a folder could be registered twice (the fault). The migration keeps the oldest row's
    key, leaves the later one unkeyed, and calls both `registered`: neither may be purged, dropping one
    leaves the other a whole table, and a third registration of the folder is refused."""
    with TestClient(create_app(settings)) as api:
        table = create_table(api, "sales", "orders", FIELDS, partitionKeys=["dt"])
        append(api, table, range(3))
    command.downgrade(alembic_config(back_at_head), "0006")
    engine = create_engine(back_at_head)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO paimon_tables (id, database, name, uuid, location, schema_id, schema_json, "
                "latest_snapshot_id, created_at, total_record_count, file_count, file_bytes) "
                "SELECT 'copy.orders', 'copy', 'orders', uuid, location, schema_id, schema_json, "
                "latest_snapshot_id, created_at + 1, total_record_count, file_count, file_bytes "
                "FROM paimon_tables WHERE id = 'sales.orders'"
            )
        )
    upgrade(back_at_head)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, location_key, origin FROM paimon_tables ORDER BY id")).all()
    engine.dispose()
    assert [tuple(r) for r in rows] == [
        ("copy.orders", None, "registered"),
        ("sales.orders", location_key(str(table.location)), "registered"),
    ]

    with TestClient(create_app(settings)) as api:
        before = listing(warehouse)
        for table_id in ("copy.orders", "sales.orders"):
            refused = api.delete(f"/tables/{table_id}", params={"purge": "true"})
            assert refused.status_code == 409, refused.text
            assert refused.json()["code"] == "PURGE_REFUSED"
        third = register(api, "third.orders", str(table.location))
        assert third.status_code == 409
        assert "sales.orders" in third.json()["message"]
        assert listing(warehouse) == before

        assert api.delete("/tables/copy.orders").status_code == 204
        assert listing(warehouse) == before
        assert append(api, table, range(3, 4), dt="b") == 2
    expected = [{"dt": "a", "id": i} for i in range(3)] + [{"dt": "b", "id": 3}]
    assert pypaimon_rows(warehouse, "sales.orders") == sorted_rows(expected)
