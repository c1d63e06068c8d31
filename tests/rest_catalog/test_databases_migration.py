"""Revision 0008 gives every database its own row: the databases of existing tables are backfilled,
each created when its oldest table was."""

from __future__ import annotations

from alembic import command
from sqlalchemy import create_engine, inspect, text

from coordinator.db.migrate import alembic_config


def test_existing_tables_databases_are_backfilled(database_url: str) -> None:
    config = alembic_config(database_url)
    command.downgrade(config, "0007")
    engine = create_engine(database_url)
    assert "paimon_databases" not in inspect(engine).get_table_names()
    with engine.begin() as conn:
        for table_id, created in (("sales.orders", 5.0), ("sales.items", 3.0), ("ops.jobs", 9.0)):
            database, name = table_id.split(".")
            conn.execute(
                text(
                    "INSERT INTO paimon_tables (id, database, name, uuid, location, location_key, "
                    "schema_id, schema_json, latest_snapshot_id, created_at) "
                    "VALUES (:id, :db, :name, :id, :loc, :loc, 0, '{}', 0, :at)"
                ),
                {"id": table_id, "db": database, "name": name, "loc": f"/wh/{table_id}", "at": created},
            )
    command.upgrade(config, "head")
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT name, created_at FROM paimon_databases ORDER BY name")).all()
    assert [tuple(r) for r in rows] == [("ops", 9.0), ("sales", 3.0)]
    command.downgrade(config, "0007")
    assert "paimon_databases" not in inspect(engine).get_table_names()
    command.upgrade(config, "head")
    engine.dispose()
