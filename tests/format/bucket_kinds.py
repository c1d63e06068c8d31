"""Key kinds for the bucket tests and pypaimon's writer as the judge of bucket assignment."""

from __future__ import annotations

from decimal import Context, Decimal

import pyarrow as pa
from hypothesis import strategies as st
from pypaimon.schema.schema import Schema
from pypaimon.schema.table_schema import TableSchema
from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor

from paimon_format.types import DataType

_WIDE = Context(prec=100)

# (our key type, arrow type pypaimon's table uses, value strategy)
KEY_KINDS: dict[str, tuple[DataType, pa.DataType, st.SearchStrategy[object]]] = {
    "int": (DataType("INT"), pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "bigint": (DataType("BIGINT"), pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "short_string": (DataType("STRING"), pa.string(), st.text(max_size=3)),
    "long_string": (DataType("STRING"), pa.string(), st.text(min_size=8, max_size=40)),
    "date": (DataType("DATE"), pa.date32(), st.dates()),
    "decimal": (
        DataType("DECIMAL", precision=12, scale=3),
        pa.decimal128(12, 3),
        st.integers(-(10**12) + 1, 10**12 - 1).map(lambda u: Decimal(u).scaleb(-3, _WIDE)),
    ),
    "big_decimal": (
        DataType("DECIMAL", precision=30, scale=5),
        pa.decimal128(30, 5),
        st.integers(-(10**30) + 1, 10**30 - 1).map(lambda u: Decimal(u).scaleb(-5, _WIDE)),
    ),
}


def pypaimon_buckets(kinds: list[str], rows: list[list[object]], num_buckets: int) -> list[int]:
    """Buckets pypaimon's writer assigns to rows of a PK table keyed by the given columns."""
    key_fields = [pa.field(f"k{i}", KEY_KINDS[kind][1], nullable=False) for i, kind in enumerate(kinds)]
    pa_schema = pa.schema([*key_fields, pa.field("v", pa.int64())])
    schema = Schema.from_pyarrow_schema(
        pa_schema, primary_keys=[f.name for f in key_fields], options={"bucket": str(num_buckets)}
    )
    extractor = FixedBucketRowKeyExtractor(TableSchema.from_schema(0, schema))
    columns: dict[str, list[object]] = {f"k{i}": [row[i] for row in rows] for i in range(len(kinds))}
    columns["v"] = [0] * len(rows)
    batch = pa.RecordBatch.from_pydict(columns, schema=pa_schema)
    _, buckets = extractor.extract_partition_bucket_batch(batch)
    return list(buckets)
