"""The `coordinator` command: serve, tokens, db upgrade, openapi."""

from __future__ import annotations

import argparse
import getpass
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from coordinator.settings import Settings
from coordinator.storage.store_uri import redacted

if TYPE_CHECKING:
    from sqlalchemy import Engine

_FLAGS = {
    "database_url": "--database-url",
    "warehouse": "--warehouse",
    "host": "--host",
    "port": "--port",
    "workers": "--workers",
    "lock_lease_seconds": "--lock-lease-seconds",
    "lock_acquire_timeout_seconds": "--lock-acquire-timeout-seconds",
    "require_tokens": "--require-tokens",
    "allow_open_bind": "--allow-open-bind",
    "catalog_name": "--catalog-name",
    "advertise_url": "--advertise-url",
}


def _settings(args: argparse.Namespace) -> Settings:
    """Environment (COORDINATOR_*) first, flags override."""
    overrides = {k: v for k, v in vars(args).items() if k in _FLAGS and v is not None}
    return Settings(**overrides)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from coordinator.app import create_app
    from coordinator.observability.logs import configure_logging

    settings = _settings(args)
    configure_logging(settings.log_format)
    log = logging.getLogger(__name__)
    refused = settings.unprotected_bind_refused() or settings.workers_refused()
    if refused is not None:
        log.error(refused)
        return 2
    log.info(
        "coordinator on http://%s:%d, database %s, warehouse %s, locks %s%s",
        settings.host,
        settings.port,
        settings.database_url.split("@")[-1],
        redacted(settings.warehouse),
        settings.lock_backend,
        f", {settings.workers} workers" if settings.workers > 1 else "",
    )
    if not settings.require_tokens:
        log.warning(
            "no access control: every caller is an admin. Fine on %s for one user; elsewhere set "
            "COORDINATOR_REQUIRE_TOKENS=true and create tokens with `coordinator tokens create`",
            settings.host,
        )
    if settings.workers > 1:
        from coordinator.workers import serve_workers

        return serve_workers(settings)
    uvicorn.run(
        create_app(settings, serving=True),
        host=settings.host,
        port=settings.port,
        log_config=None,  # keep our handlers: uvicorn's own lines come out in the same format
        access_log=False,  # RequestContext writes one access line per request, with its request id
        workers=1,
    )
    return 0


@contextmanager
def _database(args: argparse.Namespace) -> Iterator[Engine]:
    """The metadata database, migrated first unless auto_migrate is off."""
    from coordinator.db.engine import make_engine
    from coordinator.db.migrate import upgrade

    settings = _settings(args)
    if settings.auto_migrate:
        upgrade(settings.database_url)
    engine = make_engine(settings.database_url, settings.database_statement_timeout_seconds)
    try:
        yield engine
    finally:
        engine.dispose()


def _audit(engine: Engine, action: str, target: str, details: dict[str, object]) -> None:
    from coordinator.access.audit import AuditLog

    AuditLog(engine).record(f"cli:{getpass.getuser()}", action, target, details)


def _tokens_create(args: argparse.Namespace) -> int:
    from coordinator.access.tokens import TokenStore
    from coordinator.errors import InvalidRequest

    with _database(args) as engine:
        try:
            issued = TokenStore(engine).create(args.name, args.role, database=args.database, table=args.table)
        except InvalidRequest as error:
            print(f"coordinator tokens create: {error.field}: {error.message}", file=sys.stderr)
            return 2
        p = issued.principal
        grant = {"database": p.database, "table": p.table_name}
        _audit(engine, "create-token", p.token_id or "", {"name": p.name, "role": p.role, **grant})
    # The secret goes to stdout alone, so `TOKEN=$(coordinator tokens create ...)` works.
    print(issued.token)
    print(
        f"token {p.token_id} ({p.role}) created; the secret above is not stored and is shown once",
        file=sys.stderr,
    )
    return 0


def _tokens_list(args: argparse.Namespace) -> int:
    from coordinator.access.tokens import TokenStore

    with _database(args) as engine:
        tokens = TokenStore(engine).list()
    rows = [
        {
            "id": t.id,
            "name": t.name,
            "role": t.role,
            "database": t.database,
            "table": t.table_name,
            "createdAt": t.created_at,
            "revokedAt": t.revoked_at,
        }
        for t in tokens
    ]
    print(json.dumps(rows, indent=2))
    return 0


def _tokens_revoke(args: argparse.Namespace) -> int:
    from coordinator.access.tokens import TokenStore

    with _database(args) as engine:
        if not TokenStore(engine).revoke(args.token_id):
            print(f"coordinator tokens revoke: no live token {args.token_id}", file=sys.stderr)
            return 1
        _audit(engine, "revoke-token", args.token_id, {})
    print(f"token {args.token_id} revoked", file=sys.stderr)
    return 0


def _db_upgrade(args: argparse.Namespace) -> int:
    from coordinator.db.migrate import upgrade

    settings = _settings(args)
    upgrade(settings.database_url)
    print(f"database at revision head: {settings.database_url.split('@')[-1]}")
    return 0


def _openapi(args: argparse.Namespace) -> int:
    from coordinator.openapi_spec import openapi_document

    text = json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="coordinator", description="Paimon Commit Coordinator")
    commands = top.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the REST service")
    serve.add_argument("--database-url", help="SQLAlchemy URL (COORDINATOR_DATABASE_URL)")
    serve.add_argument("--warehouse", help="folder or filesystem URI of the tables (COORDINATOR_WAREHOUSE)")
    serve.add_argument("--host", help="bind address (COORDINATOR_HOST)")
    serve.add_argument("--port", type=int, help="port (COORDINATOR_PORT)")
    serve.add_argument(
        "--workers",
        type=int,
        help="processes serving the port together, one per core; more than 1 needs PostgreSQL "
        "(COORDINATOR_WORKERS)",
    )
    serve.add_argument(
        "--lock-lease-seconds", type=float, help="table lock lease (COORDINATOR_LOCK_LEASE_SECONDS)"
    )
    serve.add_argument(
        "--lock-acquire-timeout-seconds",
        type=float,
        help="wait for a lock this long, then 503 (COORDINATOR_LOCK_ACQUIRE_TIMEOUT_SECONDS)",
    )
    serve.add_argument(
        "--require-tokens",
        action="store_true",
        default=None,
        help="every request needs a bearer token (COORDINATOR_REQUIRE_TOKENS)",
    )
    serve.add_argument(
        "--allow-open-bind",
        action="store_true",
        default=None,
        help="serve without tokens on a non-loopback address (COORDINATOR_ALLOW_OPEN_BIND)",
    )
    serve.add_argument(
        "--catalog-name",
        help="the warehouse name of Paimon's REST catalog clients (COORDINATOR_CATALOG_NAME)",
    )
    serve.add_argument(
        "--advertise-url",
        help="where other replicas reach this one; they forward commits to the replica holding a "
        "table's lock (COORDINATOR_ADVERTISE_URL)",
    )
    serve.set_defaults(run=_serve)

    tokens = commands.add_parser("tokens", help="bearer tokens: create, list, revoke")
    token_commands = tokens.add_subparsers(dest="tokens_command", required=True)
    create = token_commands.add_parser("create", help="issue a token; prints its secret once")
    create.add_argument("--name", required=True, help="who holds it; recorded as the actor of its actions")
    create.add_argument("--role", required=True, choices=["reader", "writer", "admin"])
    create.add_argument(
        "--database",
        help="the database it may use: a writer commits and reads there, a reader reads only there "
        "(a writer needs this or --table; a reader without either reads everything)",
    )
    create.add_argument(
        "--table", help="the one table (<database>.<name>) it may use, instead of a whole database"
    )
    create.set_defaults(run=_tokens_create)
    listing = token_commands.add_parser("list", help="every token, without secrets")
    listing.set_defaults(run=_tokens_list)
    revoke = token_commands.add_parser("revoke", help="revoke a token by id")
    revoke.add_argument("token_id")
    revoke.set_defaults(run=_tokens_revoke)
    for command in (create, listing, revoke):
        command.add_argument("--database-url", help="SQLAlchemy URL (COORDINATOR_DATABASE_URL)")

    db = commands.add_parser("db", help="database schema")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    up = db_commands.add_parser("upgrade", help="alembic upgrade head")
    up.add_argument("--database-url", help="SQLAlchemy URL (COORDINATOR_DATABASE_URL)")
    up.set_defaults(run=_db_upgrade)

    spec = commands.add_parser("openapi", help="print the OpenAPI document")
    spec.add_argument("--output", help="write to this file instead of stdout")
    spec.set_defaults(run=_openapi)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
