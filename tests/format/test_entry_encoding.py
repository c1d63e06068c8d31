"""The bulk entry encoder writes exactly fastavro's bytes, and manifests built from them read back."""

from __future__ import annotations

import io
from typing import Any

import fastavro
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_format.entry_encoding import encode_entries
from paimon_format.manifest import (
    MANIFEST_SCHEMA,
    ManifestEntry,
    SimpleStats,
    decode_entry,
    decode_manifest,
    encode_manifest,
)
from tests.format.test_manifest import ENTRIES

_PARSED = fastavro.parse_schema(dict(MANIFEST_SCHEMA))


def _stats(stats: SimpleStats) -> dict[str, Any]:
    nulls = None if stats.null_counts is None else list(stats.null_counts)
    return {"_MIN_VALUES": stats.min_values, "_MAX_VALUES": stats.max_values, "_NULL_COUNTS": nulls}


def _listed(values: tuple[Any, ...] | None) -> list[Any] | None:
    return None if values is None else list(values)


def fastavro_bytes(entry: ManifestEntry) -> bytes:
    """The reference: the record as a dict in the schema's field order, written by fastavro."""
    f = entry.file
    record = {
        "_VERSION": 2,
        "_KIND": int(entry.kind),
        "_PARTITION": entry.partition,
        "_BUCKET": entry.bucket,
        "_TOTAL_BUCKETS": entry.total_buckets,
        "_FILE": {
            "_FILE_NAME": f.file_name,
            "_FILE_SIZE": f.file_size,
            "_ROW_COUNT": f.row_count,
            "_MIN_KEY": f.min_key,
            "_MAX_KEY": f.max_key,
            "_KEY_STATS": _stats(f.key_stats),
            "_VALUE_STATS": _stats(f.value_stats),
            "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
            "_SCHEMA_ID": f.schema_id,
            "_LEVEL": f.level,
            "_EXTRA_FILES": list(f.extra_files),
            "_CREATION_TIME": f.creation_time,
            "_DELETE_ROW_COUNT": f.delete_row_count,
            "_EMBEDDED_FILE_INDEX": f.embedded_index,
            "_FILE_SOURCE": f.file_source,
            "_VALUE_STATS_COLS": _listed(f.value_stats_cols),
            "_EXTERNAL_PATH": f.external_path,
            "_FIRST_ROW_ID": f.first_row_id,
            "_WRITE_COLS": _listed(f.write_cols),
            "_WRITE_COLS_SEQUENCES": _listed(f.write_cols_sequences),
        },
    }
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, _PARSED, record)
    return buffer.getvalue()


@settings(max_examples=300, deadline=None)
@given(st.lists(ENTRIES, max_size=6))
def test_bytes_are_fastavros(entries: list[ManifestEntry]) -> None:
    """Whatever parts the entries of one batch share or not (the encoder remembers shared parts)."""
    batch = entries + entries[::-1]
    assert encode_entries(batch) == [fastavro_bytes(e) for e in batch]
    assert [decode_entry(b) for b in encode_entries(batch)] == batch


@settings(max_examples=30, deadline=None)
@given(st.lists(ENTRIES, min_size=1, max_size=3), st.integers(1, 2000))
def test_manifests_of_many_blocks_read_back_in_order(entries: list[ManifestEntry], copies: int) -> None:
    many = entries * copies
    data = encode_manifest(many)
    blocks = list(fastavro.block_reader(io.BytesIO(data)))
    assert sum(b.num_records for b in blocks) == len(many)
    assert decode_manifest(data) == many
