"""The committed OpenAPI document matches the app; the migrations match the models and run both ways."""

from __future__ import annotations

import json
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from coordinator.db.migrate import alembic_config
from coordinator.db.models import Base
from coordinator.openapi_spec import openapi_document

SPEC = Path(__file__).resolve().parents[1] / "openapi" / "openapi.json"


def test_openapi_document_has_not_drifted() -> None:
    committed = json.loads(SPEC.read_text())
    assert committed == openapi_document(), (
        "regenerate with: coordinator openapi --output openapi/openapi.json"
    )
    assert "/tables/{table_id}/commits" in committed["paths"]
    assert "409" in committed["paths"]["/tables/{table_id}/commits"]["post"]["responses"]


def test_migrations_match_the_models(database_url: str) -> None:
    engine = create_engine(database_url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    engine.dispose()
    assert diff == []


def test_migrations_downgrade_and_upgrade_again(database_url: str) -> None:
    config = alembic_config(database_url)
    command.downgrade(config, "base")
    engine = create_engine(database_url)
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    command.upgrade(config, "head")
    assert {"paimon_tables", "snapshots", "commits", "locks"} <= set(inspect(engine).get_table_names())
    engine.dispose()
