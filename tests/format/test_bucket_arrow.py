"""Column-wise BinaryRow bytes and buckets: identical to the row-at-a-time codec and to pypaimon's writer."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_format.binary_row import encode_row
from paimon_format.bucket import bucket_of
from paimon_format.bucket_arrow import buckets_of_columns, encode_rows_columns
from paimon_format.types import DataType
from tests.format.bucket_kinds import KEY_KINDS, pypaimon_buckets

# Kinds with a column-wise encoding; big_decimal (precision 30) exercises the row-at-a-time fallback.
COLUMNAR = sorted(k for k in KEY_KINDS if k != "big_decimal")

# Extra types and values (with nulls) for the byte-for-byte comparison with encode_row.
_MORE: dict[str, tuple[DataType, pa.DataType, st.SearchStrategy[object]]] = {
    "boolean": (DataType("BOOLEAN"), pa.bool_(), st.booleans()),
    "tinyint": (DataType("TINYINT"), pa.int8(), st.integers(-128, 127)),
    "smallint": (DataType("SMALLINT"), pa.int16(), st.integers(-(2**15), 2**15 - 1)),
    "double": (DataType("DOUBLE"), pa.float64(), st.floats(allow_nan=False)),
    "float": (DataType("FLOAT"), pa.float32(), st.floats(width=32, allow_nan=False)),
    "bytes": (DataType("BYTES"), pa.binary(), st.binary(max_size=20)),
    "char": (DataType("CHAR", length=12), pa.string(), st.text(max_size=12)),
}
ALL_KINDS = {**{k: KEY_KINDS[k] for k in COLUMNAR}, **_MORE}


def arrow_columns(
    kinds: list[str], rows: list[list[object]], table: Mapping[str, tuple[DataType, pa.DataType, object]]
) -> list[pa.Array]:
    return [pa.array([row[i] for row in rows], type=table[kind][1]) for i, kind in enumerate(kinds)]


@st.composite
def columns_with_nulls(draw: st.DrawFn) -> tuple[list[str], list[list[object]]]:
    kinds = draw(st.lists(st.sampled_from(sorted(ALL_KINDS)), min_size=1, max_size=5))
    values = [st.none() | ALL_KINDS[k][2] for k in kinds]
    return kinds, draw(st.lists(st.tuples(*values).map(list), min_size=0, max_size=12))


@settings(max_examples=300, deadline=None)
@given(columns_with_nulls())
def test_row_bytes_equal_encode_row(case: tuple[list[str], list[list[object]]]) -> None:
    kinds, rows = case
    types = [ALL_KINDS[k][0] for k in kinds]
    buffer, starts, lengths = encode_rows_columns(arrow_columns(kinds, rows, ALL_KINDS), types)
    assert len(starts) == len(rows)
    for row, start, length in zip(rows, starts, lengths, strict=True):
        assert start % 8 == 0
        assert buffer[start : start + length].tobytes() == encode_row(row, types)[4:]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_buckets_equal_pypaimon_writer(data: st.DataObject) -> None:
    """The acceptance's property: random keys of int, bigint, short and long strings, date, decimal."""
    kinds = data.draw(st.lists(st.sampled_from(COLUMNAR), min_size=1, max_size=4))
    rows = data.draw(
        st.lists(st.tuples(*(KEY_KINDS[k][2] for k in kinds)).map(list), min_size=1, max_size=30)
    )
    num_buckets = data.draw(st.integers(1, 64))
    types = [KEY_KINDS[k][0].not_null() for k in kinds]
    ours = buckets_of_columns(arrow_columns(kinds, rows, KEY_KINDS), types, num_buckets)
    assert ours.tolist() == pypaimon_buckets(kinds, rows, num_buckets)


def test_a_type_without_a_columnwise_encoding_falls_back_to_the_row_codec() -> None:
    values = [Decimal("123456789012345678901234.5"), Decimal("-1.00001"), None]
    t = DataType("DECIMAL", precision=30, scale=5)
    column = pa.array(values, type=pa.decimal128(30, 5))
    expected = [bucket_of(encode_row([v], [t]), 7) for v in values]
    assert buckets_of_columns([column], [t], 7).tolist() == expected
    with pytest.raises(ValueError, match="no column-wise"):
        encode_rows_columns([column], [t])


def test_a_large_batch_agrees_with_the_row_codec() -> None:
    """Chunked columns of mixed widths: long strings of many lengths give rows of many lengths."""
    n = 5_000
    ids = list(range(-n // 2, n // 2))
    names = ["x" * (i % 23) + str(i) for i in range(n)]
    days = [date(2024, 1, 1 + i % 28) for i in range(n)]
    columns = [
        pa.chunked_array([ids[: n // 3], ids[n // 3 :]], type=pa.int64()),
        pa.array(names),
        pa.array(days),
    ]
    types = [DataType("BIGINT"), DataType("STRING"), DataType("DATE")]
    expected = [bucket_of(encode_row(list(r), types), 16) for r in zip(ids, names, days, strict=True)]
    assert buckets_of_columns(columns, types, 16).tolist() == expected


def test_rejects_mismatched_input() -> None:
    with pytest.raises(ValueError, match="positive"):
        buckets_of_columns([pa.array([1])], [DataType("INT")], 0)
    with pytest.raises(ValueError, match="differ in length"):
        encode_rows_columns([pa.array([1]), pa.array([1, 2])], [DataType("INT"), DataType("INT")])
