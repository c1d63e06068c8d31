"""Partition directories: Paimon's naming rules, pypaimon's reader path, and a real pypaimon table."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import date, datetime, time, timezone
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pypaimon.schema.data_types import DataField, DataTypeParser
from pypaimon.table.row.generic_row import GenericRowDeserializer
from pypaimon.utils.file_store_path_factory import FileStorePathFactory

from paimon_format.binary_row import encode_row
from paimon_format.partition_path import bucket_dir, partition_path, partition_value_text
from paimon_format.types import DataType, parse_type
from tests.format.row_strategies import values_for

DATE = DataType("DATE")
STRING = DataType("STRING")
INT = DataType("INT")


def _path(
    names: Sequence[str], values: Sequence[object], types: Sequence[str], legacy_name: bool = True
) -> str:
    return partition_path(names, values, [parse_type(t) for t in types], legacy_name=legacy_name)


# ---------------------------------------------------------------- naming rules


def test_unpartitioned_is_empty() -> None:
    assert partition_path([], [], []) == ""


def test_date_is_days_since_epoch_in_legacy_mode() -> None:
    assert partition_path(["d"], [date(2024, 1, 1)], [DATE]) == "d=19723"
    assert partition_path(["d"], [date(1969, 12, 31)], [DATE]) == "d=-1"
    assert partition_path(["d"], [date(2024, 1, 1)], [DATE], legacy_name=False) == "d=2024-01-01"


@pytest.mark.parametrize("blank", [None, "", "  ", "\t\n"])
def test_null_and_blank_use_default_name(blank: object) -> None:
    assert partition_path(["s"], [blank], [STRING]) == "s=__DEFAULT_PARTITION__"
    assert partition_path(["s"], [blank], [STRING], default_name="none") == "s=none"


def test_null_non_string_uses_default_name() -> None:
    assert (
        partition_path(["d", "i"], [None, None], [DATE, INT])
        == "d=__DEFAULT_PARTITION__/i=__DEFAULT_PARTITION__"
    )


def test_escaping_in_values_and_names() -> None:
    assert partition_path(["s"], ["a/b"], [STRING]) == "s=a%2Fb"
    assert partition_path(["s"], ["k=v"], [STRING]) == "s=k%3Dv"
    assert partition_path(["s"], ["100%"], [STRING]) == "s=100%25"
    assert partition_path(["s"], ["12:30"], [STRING]) == "s=12%3A30"
    assert partition_path(["s"], ["a\x01b\x7fc"], [STRING]) == "s=a%01b%7Fc"
    assert partition_path(["s"], ["\"#'*?\\{}[]^"], [STRING]) == "s=%22%23%27%2A%3F%5C%7B%7D%5B%5D%5E"
    # Spaces, dots, dashes and non-ASCII are kept verbatim.
    assert partition_path(["s"], [" a b.c-é "], [STRING]) == "s= a b.c-é "
    assert partition_path(["a/b=c"], ["x"], [STRING]) == "a%2Fb%3Dc=x"


def test_keys_keep_declared_order() -> None:
    path = partition_path(["z", "a", "m"], ["1", 2, date(1970, 1, 2)], [STRING, INT, DATE])
    assert path == "z=1/a=2/m=1"


def test_other_types_use_java_to_string() -> None:
    assert _path(["b", "c"], [True, False], ["BOOLEAN", "BOOLEAN"]) == "b=true/c=false"
    assert _path(["x"], [Decimal("1.5")], ["DECIMAL(10, 2)"]) == "x=1.50"
    assert _path(["x"], [Decimal("-0.5")], ["DECIMAL(38, 20)"]) == "x=-0.50000000000000000000"
    assert _path(["x"], [2**40], ["BIGINT"]) == "x=1099511627776"
    assert _path(["x"], [1.0], ["DOUBLE"]) == "x=1.0"
    assert _path(["x"], [1e7], ["DOUBLE"]) == "x=1.0E7"
    assert _path(["x"], [0.1], ["FLOAT"]) == "x=0.1"
    assert _path(["x"], [time(1, 0, 0, 5000)], ["TIME"]) == "x=3600005"
    assert _path(["x"], [time(1, 0, 0, 5000)], ["TIME(3)"], legacy_name=False) == "x=01%3A00%3A00.005"


@pytest.mark.parametrize(
    ("value", "legacy", "expected"),
    [
        # Non-legacy pads the fraction to the type's precision (6 here), like DateTimeUtils.formatTimestamp.
        (datetime(2024, 1, 1, 12, 30), "2024-01-01T12:30", "2024-01-01 12:30:00.000000"),
        (datetime(2024, 1, 1, 12, 30, 5), "2024-01-01T12:30:05", "2024-01-01 12:30:05.000000"),
        (datetime(2024, 1, 1, 12, 30, 0, 120000), "2024-01-01T12:30:00.120", "2024-01-01 12:30:00.120000"),
        (datetime(2024, 1, 1, 12, 30, 0, 123456), "2024-01-01T12:30:00.123456", "2024-01-01 12:30:00.123456"),
    ],
)
def test_timestamp_spelling(value: datetime, legacy: str, expected: str) -> None:
    t = [DataType("TIMESTAMP", precision=6)]
    assert partition_path(["ts"], [value], t) == "ts=" + legacy.replace(":", "%3A")
    assert partition_path(["ts"], [value], t, legacy_name=False) == "ts=" + expected.replace(":", "%3A")


def test_non_legacy_timestamp_trims_zeros_only_down_to_precision() -> None:
    value = [datetime(2024, 1, 1, 12, 30, 0, 120000)]
    assert _path(["ts"], value, ["TIMESTAMP(0)"], legacy_name=False) == "ts=2024-01-01 12%3A30%3A00.12"
    assert _path(["ts"], value, ["TIMESTAMP(3)"], legacy_name=False) == "ts=2024-01-01 12%3A30%3A00.120"
    assert (
        _path(["ts"], [datetime(2024, 1, 1)], ["TIMESTAMP(0)"], legacy_name=False)
        == "ts=2024-01-01 00%3A00%3A00"
    )


def test_ltz_legacy_uses_utc_wall_clock() -> None:
    t = [parse_type("TIMESTAMP(3) WITH LOCAL TIME ZONE")]
    aware = datetime(2024, 1, 1, 13, 30, tzinfo=timezone.utc)
    assert partition_path(["ts"], [aware], t) == partition_path(["ts"], [aware.replace(tzinfo=None)], t)
    assert partition_path(["ts"], [aware], t) == "ts=2024-01-01T13%3A30"


def test_bad_partitions() -> None:
    with pytest.raises(ValueError, match="binary partition keys"):
        partition_path(["b"], [b"x"], [DataType("BYTES")])
    with pytest.raises(ValueError, match="does not match type DATE"):
        partition_path(["d"], ["2024-01-01"], [DATE])
    with pytest.raises(ValueError, match="1 partition keys, 2 values"):
        partition_path(["d"], [1, 2], [INT])
    with pytest.raises(ValueError, match="empty"):
        partition_path([""], [1], [INT])
    assert partition_value_text(None, INT) is None


def test_bucket_dir() -> None:
    assert bucket_dir(0) == "bucket-0"
    assert bucket_dir(17) == "bucket-17"
    assert bucket_dir(-2) == "bucket-postpone"
    with pytest.raises(ValueError, match="invalid bucket"):
        bucket_dir(-1)


# ---------------------------------------------------------------- pypaimon's reader path, as an oracle

_PARTITION_ROOTS = [
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL", "CHAR",
    "VARCHAR", "STRING", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ",
]  # fmt: skip
_AWKWARD_TEXT = st.text(
    alphabet=st.sampled_from(list(" /=%:#?*'\"\\{}[]^\x01\x1f\x7f\t\xa0aé-._")), max_size=6
)


@st.composite
def partition_types(draw: st.DrawFn) -> DataType:
    root = draw(st.sampled_from(_PARTITION_ROOTS))
    if root == "DECIMAL":
        precision = draw(st.integers(1, 38))
        return DataType(root, precision=precision, scale=draw(st.integers(0, precision)))
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return DataType(root, precision=draw(st.integers(0, 9)))
    if root == "TIME":
        return DataType(root, precision=draw(st.integers(0, 3)))
    if root in ("CHAR", "VARCHAR"):
        return DataType(root, length=draw(st.integers(1, 50)))
    return DataType(root)


@st.composite
def partitions(draw: st.DrawFn) -> tuple[list[str], list[DataType], list[object]]:
    types = draw(st.lists(partition_types(), min_size=1, max_size=4))
    names = draw(
        st.lists(st.text(min_size=1, max_size=5), min_size=len(types), max_size=len(types), unique=True)
    )
    values = [draw(st.one_of(values_for(t), _AWKWARD_TEXT) if t.is_string else values_for(t)) for t in types]
    return names, types, values


def pypaimon_reader_dir(
    names: list[str], types: list[DataType], partition: bytes, bucket: int, legacy: bool
) -> str:
    """The bucket directory pypaimon's split reader resolves for a manifest entry's partition bytes."""
    fields = [
        DataField(i, n, DataTypeParser.parse_data_type(str(t)))
        for i, (n, t) in enumerate(zip(names, types, strict=True))
    ]
    decoded = GenericRowDeserializer.from_bytes(partition, fields).values
    factory = FileStorePathFactory(
        root="/table",
        partition_keys=names,
        default_part_value="__DEFAULT_PARTITION__",
        format_identifier="parquet",
        data_file_prefix="data-",
        changelog_file_prefix="changelog-",
        legacy_partition_name=legacy,
        file_suffix_include_compression=False,
        file_compression="zstd",
        partition_types=[f.type for f in fields],
    )
    return str(factory.relative_bucket_path(tuple(decoded), bucket, canonical_partition=True))


@settings(max_examples=200, deadline=None)
@given(partitions(), st.booleans(), st.sampled_from([0, 3, -2]))
def test_matches_pypaimon_reader_path(
    case: tuple[list[str], list[DataType], list[object]], legacy: bool, bucket: int
) -> None:
    names, types, values = case
    expected = pypaimon_reader_dir(names, types, encode_row(values, types), bucket, legacy)
    ours = partition_path(names, values, types, legacy_name=legacy)
    assert f"{ours}/{bucket_dir(bucket)}" == expected


# ---------------------------------------------------------------- the judge: a table pypaimon wrote


def _data_file_dirs(table_path: Path) -> set[str]:
    found = set()
    for root, _, files in os.walk(table_path):
        if any(name.startswith("data-") for name in files):
            found.add(Path(root).relative_to(table_path).as_posix())
    return found


def _write_table(
    warehouse: Path, name: str, arrow: pa.Table, keys: list[str], options: dict[str, str]
) -> Path:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    catalog.create_table(
        f"db.{name}", Schema.from_pyarrow_schema(arrow.schema, partition_keys=keys, options=options), False
    )
    table = catalog.get_table(f"db.{name}")
    builder = table.new_batch_write_builder()
    writer, committer = builder.new_write(), builder.new_commit()
    writer.write_arrow(arrow)
    committer.commit(writer.prepare_commit())
    writer.close()
    committer.close()
    read = table.new_read_builder()
    assert read.new_read().to_arrow(read.new_scan().plan().splits()).num_rows == arrow.num_rows
    return warehouse / "db.db" / name


@pytest.mark.parametrize("legacy", [True, False])
def test_pypaimon_writes_data_where_we_say(tmp_path: Path, legacy: bool) -> None:
    arrow = pa.table(
        {
            "d": pa.array(
                [date(2024, 1, 1), date(2024, 1, 1), None, date(1969, 7, 20), date(2024, 1, 1)], pa.date32()
            ),
            "s": ["a/b c", "x=y%z:w\x01", "  ", None, "plain"],
            "i": pa.array([1, 1, None, -7, 2], pa.int32()),
            "v": [1, 2, 3, 4, 5],
        }
    )
    options = {"partition.legacy-name": str(legacy).lower()}
    table_path = _write_table(tmp_path, "t", arrow, ["d", "s", "i"], options)
    types = [DATE, STRING, INT]
    expected = {
        partition_path(["d", "s", "i"], [row["d"], row["s"], row["i"]], types, legacy_name=legacy)
        + "/bucket-0"
        for row in arrow.to_pylist()
    }
    assert "d=19723/s=a%2Fb c/i=1/bucket-0" in expected or not legacy
    assert _data_file_dirs(table_path) == expected


def test_pypaimon_writes_other_key_types_where_we_say(tmp_path: Path) -> None:
    arrow = pa.table(
        {
            "b": [True, False],
            "ts": pa.array(
                [datetime(2024, 1, 1, 12, 30, 0, 123000), datetime(2000, 2, 29)], pa.timestamp("us")
            ),
            "ms": pa.array([datetime(2024, 1, 1, 0, 0, 1), None], pa.timestamp("ms")),
            "dec": pa.array([Decimal("1.50"), Decimal("-1000.25")], pa.decimal128(10, 2)),
            "big": pa.array([2**40, -1], pa.int64()),
            "dbl": pa.array([0.1, 1e7], pa.float64()),
            "v": [1, 2],
        }
    )
    keys = ["b", "ts", "ms", "dec", "big", "dbl"]
    table_path = _write_table(tmp_path, "t2", arrow, keys, {})
    types = [
        parse_type(t)
        for t in ["BOOLEAN", "TIMESTAMP(6)", "TIMESTAMP(3)", "DECIMAL(10, 2)", "BIGINT", "DOUBLE"]
    ]
    expected = {
        partition_path(keys, [row[k] for k in keys], types) + "/bucket-0" for row in arrow.to_pylist()
    }
    first = (
        "b=true/ts=2024-01-01T12%3A30%3A00.123/ms=2024-01-01T00%3A00%3A01/dec=1.50/big=1099511627776/dbl=0.1"
    )
    assert f"{first}/bucket-0" in expected
    assert _data_file_dirs(table_path) == expected
