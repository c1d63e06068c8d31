"""BinaryRow encoding: byte-for-byte equal to pypaimon's serializer, and decode_row inverts it."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from datetime import date, datetime, time, timezone
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pypaimon.schema.data_types import DataField, DataTypeParser
from pypaimon.table.row.generic_row import GenericRow, GenericRowSerializer

from paimon_format.binary_row import EMPTY_ROW, decode_row, encode_row, row_codec
from paimon_format.types import DataType, parse_type
from tests.format.row_strategies import typed_rows, values_for


def pypaimon_bytes(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """The oracle: pypaimon's own GenericRowSerializer on the same values and type strings."""
    # pypaimon keeps nullability outside AtomicType.type, so parse through its own parser.
    fields = [DataField(i, f"f{i}", DataTypeParser.parse_data_type(str(t))) for i, t in enumerate(types)]
    return bytes(GenericRowSerializer.to_bytes(GenericRow(list(values), fields)))


# ---------------------------------------------------------------- properties


@settings(max_examples=200, deadline=None)
@given(typed_rows())
def test_encode_matches_pypaimon_and_round_trips(row: tuple[list[DataType], list[object]]) -> None:
    types, values = row
    encoded = encode_row(values, types)
    assert encoded == pypaimon_bytes(values, types)
    assert decode_row(encoded, types) == values
    assert len(encoded) % 8 == 4


@settings(max_examples=25, deadline=None)
@given(st.integers(50, 130), st.data())
def test_wide_rows_use_several_null_words(arity: int, data: st.DataObject) -> None:
    # Beyond 56 fields the null bitmap spills into more header words.
    types = [DataType("INT"), DataType("STRING")] * (arity // 2)
    values = [data.draw(st.one_of(st.none(), values_for(t.not_null()))) for t in types]
    encoded = encode_row(values, types)
    assert encoded == pypaimon_bytes(values, types)
    assert decode_row(encoded, types) == values


def test_codec_is_reusable_and_cached() -> None:
    types = [DataType("INT"), DataType("STRING")]
    codec = row_codec(types)
    assert codec is row_codec(tuple(types))
    assert codec.decode(codec.encode([7, "seven days"])) == [7, "seven days"]


# ---------------------------------------------------------------- fixed examples (paimon-format.md §4/§5)


def test_partition_row_from_real_file() -> None:
    encoded = encode_row(["2024-01-01"], [DataType("STRING")])
    assert encoded.hex() == "00000001" + "00" * 8 + "0a000000" + "10000000" + b"2024-01-01".hex() + "00" * 6
    assert len(encoded) == 36


def test_short_string_is_inline() -> None:
    encoded = encode_row(["short"], [DataType("STRING")])
    assert encoded[12:].hex() == "73686f7274000085"
    assert len(encoded) == 20


def test_seven_and_eight_byte_strings_switch_layout() -> None:
    seven = encode_row(["1234567"], [DataType("STRING")])
    eight = encode_row(["12345678"], [DataType("STRING")])
    assert seven[-1] == 0x87
    assert len(seven) == 20
    assert eight[12:20] == (16 << 32 | 8).to_bytes(8, "little")
    assert eight[20:] == b"12345678"


def test_empty_row() -> None:
    assert EMPTY_ROW == bytes(12)
    assert encode_row([], []) == EMPTY_ROW
    assert decode_row(EMPTY_ROW, []) == []


def test_bigint_key_from_real_file() -> None:
    assert (
        encode_row([1], [DataType("BIGINT", nullable=False)]).hex() == "00000001" + "00" * 8 + "01" + "00" * 7
    )


def test_null_sets_bit_and_zeroes_slot() -> None:
    encoded = encode_row([5, None], [DataType("INT"), DataType("STRING")])
    assert encoded[4:12] == bytes([0, 0b10, 0, 0, 0, 0, 0, 0])
    assert encoded[20:28] == bytes(8)


def test_big_decimal_takes_sixteen_byte_var_slot() -> None:
    t = DataType("DECIMAL", precision=38, scale=2)
    encoded = encode_row([Decimal("-1.28")], [t])
    assert len(encoded) == 4 + 16 + 16
    # pypaimon's length rule: (bit_length + 8) // 8 -> 2 bytes for -128 (Java would use 1).
    assert encoded[12:20] == (16 << 32 | 2).to_bytes(8, "little")
    assert encoded[20:22] == (-128).to_bytes(2, "big", signed=True)


def test_precise_timestamp_keeps_nanos_of_milli() -> None:
    t = DataType("TIMESTAMP", precision=6)
    value = datetime(2024, 1, 1, 0, 0, 0, 123456)
    encoded = encode_row([value], [t])
    millis = int((value - datetime(1970, 1, 1)).total_seconds() * 1000)
    assert encoded[12:20] == (16 << 32 | 456_000).to_bytes(8, "little")
    assert encoded[20:28] == millis.to_bytes(8, "little", signed=True)


def test_ltz_accepts_aware_values_as_instants() -> None:
    t = parse_type("TIMESTAMP(3) WITH LOCAL TIME ZONE")
    aware = datetime(2024, 1, 1, 12, 0, tzinfo=timezone.utc)
    assert encode_row([aware], [t]) == encode_row([aware.replace(tzinfo=None)], [t])


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("value", "t"),
    [
        (Decimal("1234.5"), DataType("DECIMAL", precision=5, scale=2)),
        (Decimal("1.234"), DataType("DECIMAL", precision=5, scale=2)),
        (Decimal("1E+40"), DataType("DECIMAL", precision=38, scale=0)),
        (Decimal("1E-999999"), DataType("DECIMAL", precision=38, scale=10)),
        (Decimal("NaN"), DataType("DECIMAL", precision=10, scale=0)),
        (10**38, DataType("DECIMAL", precision=38, scale=0)),
        (1.5, DataType("DECIMAL", precision=10, scale=2)),
        ("1", DataType("INT")),
        (2**31, DataType("INT")),
        (128, DataType("TINYINT")),
        (1.5, DataType("BIGINT")),
        (3.5e38, DataType("FLOAT")),
        ("x", DataType("DOUBLE")),
        (1, DataType("BOOLEAN")),
        (b"x", DataType("STRING")),
        ("x", DataType("BYTES")),
        (datetime(2024, 1, 1), DataType("DATE")),
        ("2024-01-01", DataType("DATE")),
        (datetime(2024, 1, 1, tzinfo=timezone.utc), DataType("TIMESTAMP", precision=6)),
        (date(2024, 1, 1), DataType("TIMESTAMP", precision=3)),
    ],
)
def test_bad_values_are_rejected_naming_the_field(value: object, t: DataType) -> None:
    with pytest.raises(ValueError, match=r"field 1 "):
        encode_row([1, value], [DataType("INT"), t])


def test_decimal_overflow_is_rejected_not_nulled() -> None:
    t = DataType("DECIMAL", precision=4, scale=2)
    assert decode_row(encode_row([Decimal("99.99")], [t]), [t]) == [Decimal("99.99")]
    with pytest.raises(ValueError, match="does not fit"):
        encode_row([Decimal("100.00")], [t])


def test_arity_mismatch() -> None:
    with pytest.raises(ValueError, match="2 values but 1 types"):
        encode_row([1, 2], [DataType("INT")])
    with pytest.raises(ValueError, match="arity 1 does not match 2"):
        decode_row(encode_row([1], [DataType("INT")]), [DataType("INT"), DataType("INT")])


def test_malformed_bytes() -> None:
    t = [DataType("STRING")]
    good = encode_row(["a longer string"], t)
    with pytest.raises(ValueError, match="too short"):
        decode_row(good[:10], t)
    with pytest.raises(ValueError, match="outside the row"):
        decode_row(good[:-8], t)
    with pytest.raises(ValueError, match="row kind"):
        decode_row(good[:4] + b"\x09" + good[5:], t)
    with pytest.raises(ValueError, match="malformed BinaryRow field 0"):
        decode_row(good[:12] + (200 << 32 | 4).to_bytes(8, "little") + good[20:], t)
    with pytest.raises(ValueError, match="must be bytes"):
        decode_row("not bytes", t)  # type: ignore[arg-type]


def test_decode_rejects_out_of_precision_decimal() -> None:
    compact = DataType("DECIMAL", precision=2, scale=0)
    raw = encode_row([100], [DataType("BIGINT")])  # same slot layout, but 100 needs 3 digits
    with pytest.raises(ValueError, match="does not fit"):
        decode_row(raw, [compact])


def test_time_round_trip_keeps_millis() -> None:
    t = DataType("TIME", precision=3)
    assert decode_row(encode_row([time(23, 59, 59, 999000)], [t]), [t]) == [time(23, 59, 59, 999000)]


def test_decode_accepts_java_layout_for_null_non_compact_fields() -> None:
    # Java's RowHelper writes a null DECIMAL(>18)/TIMESTAMP(>3) with a cursor in the slot and reserves
    # 16/8 zero bytes; pypaimon (and encode_row) write a zero slot. Both must decode to null.
    types = [DataType("DECIMAL", precision=38, scale=2), DataType("TIMESTAMP", precision=6), DataType("INT")]
    header = bytes([0, 0b11, 0, 0, 0, 0, 0, 0])
    slots = (32 << 32).to_bytes(8, "little") + (48 << 32).to_bytes(8, "little") + (7).to_bytes(8, "little")
    java = (3).to_bytes(4, "big") + header + slots + bytes(16) + bytes(8)
    assert decode_row(java, types) == [None, None, 7]
    ours = encode_row([None, None, 7], types)
    assert ours == pypaimon_bytes([None, None, 7], types)
    assert len(ours) == 4 + 32
    assert ours != java


def test_codec_pickles() -> None:
    codec = row_codec([DataType("INT"), DataType("DECIMAL", precision=20, scale=1)])
    clone = pickle.loads(pickle.dumps(codec))
    assert clone.encode([1, Decimal("2.5")]) == codec.encode([1, Decimal("2.5")])
