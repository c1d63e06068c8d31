"""Paimon's own REST catalog clients, unmodified, pointed at a coordinator: pypaimon 2.1.0 and
pypaimon-rust 0.4.0."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.catalog.catalog import Catalog

CATALOG = "paimon"
"""The coordinator's default catalog name: the `warehouse` a client passes."""


def rest_options(url: str, token: str = "any-token", warehouse: str = CATALOG) -> dict[str, str]:
    """All a client is given: the coordinator's URI, the catalog name and a bearer token."""
    return {"metastore": "rest", "uri": url, "warehouse": warehouse, "token.provider": "bear", "token": token}


def pypaimon_catalog(url: str, token: str = "any-token") -> Catalog:
    return CatalogFactory.create(rest_options(url, token))


def schema(
    fields: dict[str, pa.DataType],
    *,
    partition_keys: list[str] | None = None,
    primary_keys: list[str] | None = None,
    options: dict[str, str] | None = None,
) -> Schema:
    return Schema.from_pyarrow_schema(
        pa.schema(list(fields.items())), partition_keys=partition_keys, primary_keys=primary_keys,
        options=options or {},
    )  # fmt: skip


def write(catalog: Catalog, table_id: str, rows: list[dict[str, Any]]) -> None:
    """One batch write and commit through pypaimon: its data files and manifests, then POST .../commit."""
    table = catalog.get_table(table_id)
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    committer = builder.new_commit()
    try:
        arrow_schema = pa.schema([(f.name, _arrow(f.type)) for f in table.table_schema.fields])
        writer.write_arrow(pa.Table.from_pylist(rows, schema=arrow_schema))
        committer.commit(writer.prepare_commit())
    finally:
        writer.close()
        committer.close()


def read(catalog: Catalog, table_id: str) -> list[dict[str, Any]]:
    """Every row pypaimon reads through the catalog, sorted."""
    table = catalog.get_table(table_id)
    read_builder = table.new_read_builder()
    splits = read_builder.new_scan().plan().splits()
    rows = read_builder.new_read().to_arrow(splits).to_pylist()
    return sorted(rows, key=lambda r: tuple(str(v) for v in r.values()))


def _arrow(paimon_type: Any) -> pa.DataType:
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_type(paimon_type)
