"""pypaimon 2.1.0 as a Paimon engine configured with `metastore=rest`: the tests' unmodified REST writer.

Everything here goes through pypaimon's own REST catalog (CatalogFactory with `uri`, `warehouse`,
`token.provider=bear` and a token), which makes every call the protocol makes: config, databases, tables,
`GET .../snapshot` and `POST .../commit`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.catalog.rest.rest_token_file_io import RESTTokenFileIO

CATALOG_NAME = "paimon"
"""The coordinator's default catalog name: what a REST client passes as `warehouse`."""


def rest_catalog(url: str, token: str = "any-token", **options: str) -> Any:
    """A pypaimon REST catalog of the coordinator at `url`.

    pypaimon keeps the storage credentials GET .../token vended in one cache per process, keyed by the
    bearer token and the table's name only: a session another test's coordinator vended for its own
    warehouse's `db.events` would be used on this one's, where the store refuses it (sessions are scoped
    to one table folder). A new catalog starts without them, as a new client process would."""
    with RESTTokenFileIO._TOKEN_LOCKS_LOCK:
        RESTTokenFileIO._TOKEN_CACHE.clear()
    return CatalogFactory.create(
        {
            "metastore": "rest",
            "uri": url,
            "warehouse": CATALOG_NAME,
            "token.provider": "bear",
            "token": token,
            **options,
        }
    )


def create_rest_table(
    catalog: Any,
    identifier: str,
    schema: pa.Schema,
    *,
    partition_keys: Sequence[str] = (),
    primary_keys: Sequence[str] = (),
    options: dict[str, str] | None = None,
) -> Any:
    """Create the database if needed and the table through the catalog; returns the pypaimon table."""
    catalog.create_database(identifier.split(".")[0], True)
    paimon_schema = Schema.from_pyarrow_schema(
        schema, partition_keys=list(partition_keys), primary_keys=list(primary_keys), options=options or {}
    )
    catalog.create_table(identifier, paimon_schema, False)
    return catalog.get_table(identifier)


def prepare(table: Any, rows: pa.Table, *, overwrite: bool = False) -> tuple[Any, list[Any]]:
    """Write `rows` as one batch and return its commit and messages, not yet committed."""
    builder = table.new_batch_write_builder()
    if overwrite:
        builder = builder.overwrite()
    write = builder.new_write()
    write.write_arrow(rows)
    messages = write.prepare_commit()
    write.close()
    return builder.new_commit(), messages


def write_rows(table: Any, rows: pa.Table, *, overwrite: bool = False) -> None:
    """Write and commit `rows` as one batch: the commit goes through `POST .../commit`."""
    commit, messages = prepare(table, rows, overwrite=overwrite)
    commit.commit(messages)
    commit.close()


def read_rows(table: Any) -> list[dict[str, Any]]:
    """Every row of the table's latest snapshot, sorted."""
    builder = table.new_read_builder()
    arrow = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    rows: list[dict[str, Any]] = arrow.to_pylist()
    return sorted(rows, key=lambda r: tuple(str(v) for v in r.values()))
