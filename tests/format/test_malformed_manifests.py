"""Avro that is a container but not Paimon's records (a writer schema with other field types) decodes to
a ValueError, as corrupt bytes do: callers answer it as bad input, never as a crash."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import fastavro
import pytest

from paimon_format.manifest import decode_manifest, decode_manifest_list, iter_manifest


def _container(fields: list[dict[str, Any]], record: dict[str, Any]) -> bytes:
    schema = fastavro.parse_schema({"type": "record", "name": "record", "fields": fields})
    out = io.BytesIO()
    fastavro.writer(out, schema, [record])
    return out.getvalue()


ENTRY_WITH_FILE_AS_STRING = _container(
    [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": "string"},
    ],
    {
        "_VERSION": 2,
        "_KIND": 0,
        "_PARTITION": b"",
        "_BUCKET": 0,
        "_TOTAL_BUCKETS": 1,
        "_FILE": "data.parquet",
    },
)
META_WITH_STATS_AS_LONG = _container(
    [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": "long"},
        {"name": "_SCHEMA_ID", "type": "long"},
    ],
    {
        "_VERSION": 2,
        "_FILE_NAME": "manifest-0",
        "_FILE_SIZE": 1,
        "_NUM_ADDED_FILES": 1,
        "_NUM_DELETED_FILES": 0,
        "_PARTITION_STATS": 7,
        "_SCHEMA_ID": 0,
    },
)


@pytest.mark.parametrize(
    ("decode", "data"),
    [
        (decode_manifest, ENTRY_WITH_FILE_AS_STRING),
        (lambda d: list(iter_manifest(d)), ENTRY_WITH_FILE_AS_STRING),
        (decode_manifest_list, META_WITH_STATS_AS_LONG),
    ],
    ids=["manifest", "manifest-iterated", "manifest-list"],
)
def test_records_of_other_types_are_a_value_error(decode: Callable[[bytes], object], data: bytes) -> None:
    with pytest.raises(ValueError, match="malformed"):
        decode(data)
