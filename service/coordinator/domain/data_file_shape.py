"""What a data file of a schema holds, as Paimon's writers write it: its format and its columns.

Formats: `file.format` (parquet unless set; orc for schemas older than Paimon 0.8), per LSM level
`file.format.per.level` (`0:avro,3:parquet`), and for changelog files `changelog-file.format`.
Columns (pypaimon's KeyValueDataWriter and Paimon Java's KeyValue file layout): an append table's files
hold the schema's columns; a primary-key table's hold `_KEY_<k>` for each trimmed primary key (the
primary key without the partition keys), then `_SEQUENCE_NUMBER` and `_VALUE_KIND`, then the schema's
columns. With `data-file.thin-mode` Paimon leaves the `_KEY_` columns out (the key is read from the
value columns).
"""

from __future__ import annotations

from paimon_format.schema import TableSchema

KEY_PREFIX = "_KEY_"
SYSTEM_COLUMNS = ("_SEQUENCE_NUMBER", "_VALUE_KIND")


def data_file_format(schema: TableSchema, level: int, *, changelog: bool) -> str:
    """The format (its file-name extension) of a data or changelog file at `level` of `schema`."""
    options = schema.options
    if changelog:
        return options.get("changelog-file.format", schema.file_format).lower()
    for pair in options.get("file.format.per.level", "").split(","):
        at, _, file_format = pair.partition(":")
        if at.strip() == str(level) and file_format.strip():
            return file_format.strip().lower()
    return schema.file_format


def data_file_columns(schema: TableSchema) -> tuple[str, ...]:
    """The top-level columns of a data file written with `schema`, in Paimon's order."""
    columns = tuple(f.name for f in schema.fields)
    if not schema.primary_keys:
        return columns
    thin = schema.options.get("data-file.thin-mode", "false").lower() == "true"
    keys = () if thin else tuple(KEY_PREFIX + k for k in schema.trimmed_primary_keys)
    return keys + SYSTEM_COLUMNS + columns
