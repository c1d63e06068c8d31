"""The `coordinator-client` command (also `python -m coordinator_client`): table maintenance, lock
operations, multi-table transactions and the commit event feed from a shell.

Each subcommand is one CoordinatorClient call; its answer is printed as the API's JSON (camelCase), so the
output pipes into jq like a curl of the endpoint would. A refused or failed call prints the error on
stderr and exits 1; a usage error exits 2 (argparse).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from coordinator_client.client import CoordinatorClient
from coordinator_client.errors import ApiError, CoordinatorClientError
from coordinator_client.models import EVENT_KINDS

DEFAULT_URL = "http://127.0.0.1:8080"

_Command = Callable[[CoordinatorClient, argparse.Namespace], BaseModel | None]


def _option(text: str) -> tuple[str, str]:
    """KEY=VALUE of --set; the value may itself contain '='."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _changes(text: str) -> list[Any]:
    """The JSON list of schema changes of `alter`: inline, `@FILE`, or `-` for stdin."""
    changes = _json(text)
    if not isinstance(changes, list):
        raise argparse.ArgumentTypeError("expected a JSON list of changes")
    return changes


def _transaction_body(text: str) -> dict[str, Any]:
    """The JSON body of `transaction`: inline, `@FILE`, or `-` for stdin."""
    body = _json(text)
    if not isinstance(body, dict):
        raise argparse.ArgumentTypeError('expected a JSON object: {"commitUser": ..., "tables": [...]}')
    return body


def _json(text: str) -> Any:
    """A JSON argument given inline, as `@FILE`, or as `-` for stdin."""
    if text == "-":
        text = sys.stdin.read()
    elif text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as f:
                text = f.read()
        except OSError as error:
            raise argparse.ArgumentTypeError(f"cannot read {text[1:]!r}: {error.strerror}") from None
    try:
        return json.loads(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not JSON: {error}") from None


# ---------------------------------------------------------------- the commands


def _options(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel:
    return client.set_options(args.table, set=dict(args.set), remove=args.remove)


def _alter(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel:
    return client.alter_table(args.table, args.changes)


def _transaction(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel:
    return client.commit_transaction(args.body)


def _expire(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel:
    return client.expire(args.table)


def _tags_list(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel:
    return client.list_tags(args.table)


def _tags_create(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel:
    return client.create_tag(args.table, args.name, args.snapshot)


def _tags_delete(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel:
    return client.delete_tag(args.table, args.name)


def _rollback(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel:
    return client.rollback(args.table, snapshot_id=args.snapshot, tag=args.tag)


def _consumers_list(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel:
    return client.list_consumers(args.table)


def _consumers_set(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel:
    return client.set_consumer(args.table, args.consumer_id, args.next_snapshot_id)


def _consumers_delete(client: CoordinatorClient, args: argparse.Namespace) -> None:
    client.delete_consumer(args.table, args.consumer_id)


def _orphans_clean(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel:
    return client.clean_orphans(args.table, older_than_seconds=args.older_than, dry_run=args.dry_run)


def _locks_list(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel:
    return client.locks()


def _locks_release(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel:
    return client.release_lock(args.lock_id)


def _events(client: CoordinatorClient, args: argparse.Namespace) -> BaseModel | None:
    """A page of the feed; with --follow, every event as one JSON line as it comes, until interrupted."""
    wanted: dict[str, Any] = {"table": args.table, "database": args.database, "kind": args.kind}
    if not args.follow:
        return client.events_page(args.after, limit=args.limit, **wanted)
    for event in client.events(args.after, **wanted):
        sys.stdout.write(event.model_dump_json(by_alias=True) + "\n")
        sys.stdout.flush()
    return None


# ---------------------------------------------------------------- the parser


def _command(
    group: argparse._SubParsersAction[argparse.ArgumentParser], name: str, run: _Command, summary: str
) -> argparse.ArgumentParser:
    """A subcommand that takes the table id first and runs `run`."""
    command = group.add_parser(name, help=summary, description=summary)
    command.add_argument("table", help="table id, database.name")
    command.set_defaults(run=run)
    return command


def _tags(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tags = commands.add_parser("tags", help="list, create and delete tags").add_subparsers(
        dest="tags_command", required=True
    )
    _command(tags, "list", _tags_list, "the table's tags")
    create = _command(tags, "create", _tags_create, "tag a retained snapshot")
    create.add_argument("name")
    create.add_argument("--snapshot", type=int, help="the snapshot id to tag (default: the latest)")
    delete = _command(tags, "delete", _tags_delete, "delete a tag and the files only it kept")
    delete.add_argument("name")


def _consumers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    consumers = commands.add_parser("consumers", help="list, set and delete consumers").add_subparsers(
        dest="consumers_command", required=True
    )
    _command(consumers, "list", _consumers_list, "the table's consumers")
    set_ = _command(consumers, "set", _consumers_set, "register or move a consumer")
    set_.add_argument("consumer_id", metavar="ID")
    set_.add_argument("next_snapshot_id", metavar="NEXT", type=int, help="the next snapshot it will read")
    delete = _command(consumers, "delete", _consumers_delete, "forget a consumer")
    delete.add_argument("consumer_id", metavar="ID")


def _locks(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    locks = commands.add_parser("locks", help="held locks; force-release a stuck one").add_subparsers(
        dest="locks_command", required=True
    )
    listing = locks.add_parser("list", help="held locks, their owners, epochs, expiry and waiters")
    listing.set_defaults(run=_locks_list)
    release = locks.add_parser("release", help="force-release a lock (admin); its holder is fenced")
    release.add_argument("lock_id", help="e.g. table:db.orders")
    release.set_defaults(run=_locks_release)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="coordinator-client",
        description="Table maintenance and lock operations through the Paimon Commit Coordinator",
    )
    top.add_argument(
        "--url",
        default=os.environ.get("COORDINATOR_URL", DEFAULT_URL),
        help=f"the coordinator (COORDINATOR_URL, default {DEFAULT_URL})",
    )
    top.add_argument(
        "--token",
        default=os.environ.get("COORDINATOR_TOKEN"),
        help="bearer token, for a coordinator with access control (COORDINATOR_TOKEN)",
    )
    top.add_argument(
        "--user", help="without access control: who asks, recorded in the table's history (default: api)"
    )
    commands = top.add_subparsers(dest="command", required=True)

    options = _command(commands, "options", _options, "set and remove table options")
    options.add_argument(
        "--set", type=_option, nargs="+", action="extend", default=[], metavar="KEY=VALUE", help="set options"
    )
    options.add_argument(
        "--remove", nargs="+", action="extend", default=[], metavar="KEY", help="remove options"
    )
    alter = _command(commands, "alter", _alter, "apply Paimon schema changes (ALTER TABLE)")
    alter.add_argument(
        "changes",
        type=_changes,
        metavar="CHANGES",
        help='JSON list of Paimon schema changes, e.g. \'[{"action": "addColumn", "fieldNames": ["note"], '
        '"dataType": "STRING"}]\'; @FILE reads it from a file, - from stdin',
    )
    _command(commands, "expire", _expire, "expire snapshots as the retention options allow")
    summary = "commit several tables' changes all or nothing (POST /transactions)"
    transaction = commands.add_parser("transaction", help=summary, description=summary)
    transaction.add_argument(
        "body",
        type=_transaction_body,
        metavar="BODY",
        help='JSON {"commitUser": ..., "identifier": ..., "tables": [{"table": "db.t", "messages": [...]}, '
        "...]}; @FILE reads it from a file, - from stdin",
    )
    transaction.set_defaults(run=_transaction)
    _tags(commands)
    rollback = _command(commands, "rollback", _rollback, "make a snapshot or a tag the latest again")
    target = rollback.add_mutually_exclusive_group(required=True)
    target.add_argument("--snapshot", type=int, help="a retained snapshot id")
    target.add_argument("--tag", help="a tag name")
    _consumers(commands)
    orphans = commands.add_parser("orphans", help="files no snapshot or tag references").add_subparsers(
        dest="orphans_command", required=True
    )
    clean = _command(orphans, "clean", _orphans_clean, "delete (or list) unreferenced files")
    clean.add_argument(
        "--older-than", type=float, default=86_400.0, metavar="SECONDS", help="minimum age (default 1 day)"
    )
    clean.add_argument("--dry-run", action="store_true", help="only list the files")
    _locks(commands)
    _events_command(commands)
    return top


def _events_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    summary = "the commit event feed: every change to a table, in commit order (GET /events)"
    events = commands.add_parser("events", help=summary, description=summary)
    events.add_argument("--after", type=int, help="the last cursor seen (default: from the oldest kept)")
    events.add_argument("--table", help="only this table (database.name)")
    events.add_argument("--database", help="only this database")
    events.add_argument("--kind", choices=EVENT_KINDS, help="only this kind")
    events.add_argument("--limit", type=int, default=100, help="events of one page (without --follow)")
    events.add_argument(
        "--follow", action="store_true", help="print each event as a JSON line as it happens, until Ctrl-C"
    )
    events.set_defaults(run=_events)


# ---------------------------------------------------------------- main


def _describe(error: CoordinatorClientError | ValidationError) -> str:
    if isinstance(error, ApiError) and error.field and error.field not in error.message:
        return f"{error} (field {error.field})"
    return str(error)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    run: _Command = args.run
    try:
        with CoordinatorClient(args.url, user=args.user, token=args.token) as client:
            answer = run(client, args)
    except (CoordinatorClientError, ValidationError) as error:
        print(f"coordinator-client: {_describe(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # how `events --follow` ends
        return 0
    if answer is not None:
        sys.stdout.write(answer.model_dump_json(by_alias=True, indent=2) + "\n")
    return 0
