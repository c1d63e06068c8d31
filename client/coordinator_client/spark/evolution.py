"""Reading data files written under an older schema of the table as rows of its current schema.

A data file keeps the schema it was written with (its manifest entry's schemaId; the schema files are
under the table's `schema/`). Columns are matched by field id, as Paimon's readers do: a column added
since reads as null, a renamed one is found under its old name, a widened one is cast (the coordinator
allows only lossless widening), a dropped one is left out. Primary-key columns keep their field id
through a rename, so their `_KEY_*` columns are matched the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa

from coordinator_client.spark.layout import KEY_PREFIX, SparkTable
from paimon_format.schema import TableSchema, schema_file_name

Sources = tuple[tuple[str, str | None], ...]
"""Each column of the table's data files, with its name in an older file (None: the file lacks it)."""


@dataclass(frozen=True)
class FileSchemas:
    """The schemas the table's files were written with, by schema id: what reading them needs."""

    layout: SparkTable
    older: Mapping[int, SparkTable]
    """The table as written under each older schema id of the files to read."""

    @classmethod
    def load(cls, layout: SparkTable, schema_ids: Iterable[int]) -> FileSchemas:
        """The schemas of `schema_ids`, read from the table's `schema/` (the current one is known)."""
        fs, root = layout.filesystem()
        older = {}
        for schema_id in set(schema_ids) - {layout.schema.id}:
            with fs.open_input_stream(f"{root}/schema/{schema_file_name(schema_id)}") as f:
                older[schema_id] = SparkTable(
                    layout.table_id, layout.location, TableSchema.from_json(f.read())
                )
        return cls(layout, older)

    def is_current(self, schema_id: int) -> bool:
        return schema_id == self.layout.schema.id

    def written(self, schema_id: int) -> SparkTable:
        """The table as a file of `schema_id` was written: its names and types."""
        return self.layout if self.is_current(schema_id) else self.older[schema_id]

    @cached_property
    def _sources(self) -> dict[int, Sources]:
        return {schema_id: _sources(self.layout, written) for schema_id, written in self.older.items()}

    def sources(self, schema_id: int) -> Sources:
        """Where each current data-file column is in a file of an older `schema_id`."""
        return self._sources[schema_id]

    def read_as_current(self, rows: pa.Table, schema_id: int) -> pa.Table:
        """Rows of a file of `schema_id` (read with its own names and types) in the current file schema."""
        target = self.layout.file_schema
        if self.is_current(schema_id):
            return rows.select(target.names).cast(target)
        arrays = [
            pa.nulls(rows.num_rows, field.type) if source is None else rows[source].cast(field.type)
            for field, (_, source) in zip(target, self.sources(schema_id), strict=True)
        ]
        return pa.Table.from_arrays(arrays, schema=target)


def _sources(current: SparkTable, written: SparkTable) -> Sources:
    """Where each data-file column of `current` is in a file `written` so, matched by field id."""
    old = {f.id: f.name for f in written.schema.fields}
    ids = {f.name: f.id for f in current.schema.fields}

    def source(column: str) -> str | None:
        if column.startswith(KEY_PREFIX):
            name = old.get(ids[column[len(KEY_PREFIX) :]])
            return None if name is None else KEY_PREFIX + name
        if column in ids:
            return old.get(ids[column])
        return column  # _SEQUENCE_NUMBER and _VALUE_KIND

    return tuple((c, source(c)) for c in current.file_schema.names)
