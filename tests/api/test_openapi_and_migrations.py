"""The committed OpenAPI document matches the app; the migrations match the models and run both ways."""

from __future__ import annotations

import json

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from coordinator.db import repositories as repo
from coordinator.db.migrate import alembic_config
from coordinator.db.models import Base
from coordinator.openapi_spec import openapi_document
from tests.support import REPO

SPEC = REPO / "openapi" / "openapi.json"


def test_the_commit_body_is_documented_by_name_though_the_route_reads_its_bytes() -> None:
    document = openapi_document()
    body = document["paths"]["/tables/{table_id}/commits"]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/CommitRequest"}
    schemas = document["components"]["schemas"]
    messages = schemas["CommitRequest"]["properties"]["messages"]
    assert messages["items"] == {"$ref": "#/components/schemas/CommitMessageModel"}
    assert "DataFileModel" in schemas


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


CONFLICT = {
    "type": "DUPLICATE_FILE",
    "message": "seen before",
    "files": ["data-1.parquet"],
    "retryable": False,
}
TEXT_ROWS = [  # as revision 0003 stored them: JSON text made by json.dumps, NULL for None
    {
        "user": "w",
        "identifier": 1,
        "outcome": "committed",
        "snapshots": [{"id": 1, "commitKind": "APPEND"}],
        "timings": {"total": 1.5},
        "conflict": None,
        "action": "commit",
        "details": None,
    },
    {
        "user": "w",
        "identifier": 2,
        "outcome": "rejected",
        "snapshots": [],
        "timings": {"conflictCheck": 0.25},
        "conflict": CONFLICT,
        "action": "commit",
        "details": None,
    },
    {
        "user": "admin",
        "identifier": 0,
        "outcome": "done",
        "snapshots": [],
        "timings": {},
        "conflict": None,
        "action": "create-tag",
        "details": {"tag": "v1", "snapshotId": 1},
    },
]


def test_json_text_of_revision_0003_becomes_json_and_back(database_url: str) -> None:
    """0004 turns the JSON text of the history and the audit log into JSON documents (JSONB on
    PostgreSQL) that the repositories and the dashboard aggregates read; its downgrade gives the text
    back."""
    config = alembic_config(database_url)
    command.downgrade(config, "0003")
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO paimon_tables (id, database, name, uuid, location, schema_id, schema_json, "
                "latest_snapshot_id, created_at) VALUES ('db.t', 'db', 't', 'u', '/wh/t', 0, '{}', 1, 1.0)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO commits (table_id, commit_user, identifier, outcome, snapshots, timings, "
                "conflict, idempotency_key, created_at, action, details) VALUES ('db.t', :user, "
                ":identifier, :outcome, :snapshots, :timings, :conflict, NULL, :at, :action, :details)"
            ),
            [
                {
                    **row,
                    "at": 100.0 + n,
                    **{k: _dumps(row[k]) for k in ("snapshots", "timings", "conflict", "details")},
                }
                for n, row in enumerate(TEXT_ROWS)
            ],
        )
        conn.execute(
            text(
                "INSERT INTO audit_log (at, actor, action, target, details) VALUES "
                "(1.0, 'cli:root', 'create-token', 'abc', :details), (2.0, 'cli:root', 'revoke', 'abc', NULL)"
            ),
            {"details": json.dumps({"role": "admin"})},
        )

    command.upgrade(config, "head")
    with engine.connect() as conn:
        history = repo.list_commits(conn, "db.t", 10)
        assert [(c.snapshots, c.timings, c.conflict, c.details) for c in reversed(history)] == [
            (r["snapshots"], r["timings"], r["conflict"], r["details"]) for r in TEXT_ROWS
        ]
        assert repo.rejections_by_type(conn) == {"db.t": {"DUPLICATE_FILE": 1}}
        assert repo.committed_timings(conn, since=0, limit=10) == [{"total": 1.5}]
        assert repo.latest_rejections(conn, 10)[0].conflict == CONFLICT
        assert [a.details for a in repo.latest_audit(conn, 10)] == [None, {"role": "admin"}]
    with engine.begin() as conn:  # written as JSON now, with None as SQL NULL
        repo.insert_maintenance(
            conn, "db.t", actor="admin", action="expire", details={"expired": [1]}, now=200
        )
        nulls = conn.execute(text("SELECT COUNT(*) FROM commits WHERE conflict IS NULL")).scalar_one()
        assert nulls == 3

    command.downgrade(config, "0003")
    assert {c["name"]: str(c["type"]) for c in inspect(engine).get_columns("commits")}["conflict"] == "TEXT"
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT snapshots, timings, conflict, details FROM commits ORDER BY id")
        ).all()
        audit = conn.execute(text("SELECT details FROM audit_log ORDER BY id")).scalars().all()
    assert [tuple(_loads(v) for v in row) for row in rows] == [
        (r["snapshots"], r["timings"], r["conflict"], r["details"]) for r in TEXT_ROWS
    ] + [([], {}, None, {"expired": [1]})]
    assert [_loads(d) for d in audit] == [{"role": "admin"}, None]
    command.upgrade(config, "head")
    engine.dispose()


def _dumps(value: object) -> str | None:
    return None if value is None else json.dumps(value)


def _loads(value: str | None) -> object:
    return None if value is None else json.loads(value)
