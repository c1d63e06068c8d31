"""The `coordinator` command: serve, db upgrade, openapi."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from coordinator.settings import Settings

_FLAGS = {
    "database_url": "--database-url",
    "warehouse": "--warehouse",
    "host": "--host",
    "port": "--port",
    "lock_lease_seconds": "--lock-lease-seconds",
    "lock_acquire_timeout_seconds": "--lock-acquire-timeout-seconds",
}


def _settings(args: argparse.Namespace) -> Settings:
    """Environment (COORDINATOR_*) first, flags override."""
    overrides = {k: v for k, v in vars(args).items() if k in _FLAGS and v is not None}
    return Settings(**overrides)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from coordinator.app import create_app

    settings = _settings(args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger(__name__).info(
        "coordinator on http://%s:%d, database %s, warehouse %s",
        settings.host,
        settings.port,
        settings.database_url.split("@")[-1],
        settings.warehouse,
    )
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning", workers=1)
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
        "--lock-lease-seconds", type=float, help="table lock lease (COORDINATOR_LOCK_LEASE_SECONDS)"
    )
    serve.add_argument(
        "--lock-acquire-timeout-seconds",
        type=float,
        help="wait for a lock this long, then 503 (COORDINATOR_LOCK_ACQUIRE_TIMEOUT_SECONDS)",
    )
    serve.set_defaults(run=_serve)

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
