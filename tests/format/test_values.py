"""JSON wire values: strict conversion to Python values and back."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date, datetime, time, timezone
from decimal import Decimal

import pytest
from hypothesis import given, settings

from paimon_format.binary_row import decode_row, encode_row
from paimon_format.types import DataType, parse_type
from paimon_format.values import from_json_value, to_json_value
from tests.format.row_strategies import typed_rows


@pytest.mark.parametrize(
    ("type_text", "wire", "python"),
    [
        ("BOOLEAN", True, True),
        ("TINYINT", -128, -128),
        ("SMALLINT", 32767, 32767),
        ("INT", -(2**31), -(2**31)),
        ("BIGINT", 2**63 - 1, 2**63 - 1),
        ("FLOAT", 1, 1.0),
        ("FLOAT", 1.5, 1.5),
        ("DOUBLE", -2.25, -2.25),
        ("DECIMAL(5, 2)", "1.5", Decimal("1.50")),
        ("DECIMAL(5, 2)", "-999.99", Decimal("-999.99")),
        ("DECIMAL(5, 2)", "1.500", Decimal("1.50")),
        ("DECIMAL(5, 2)", "1.2e1", Decimal("12.00")),
        ("DECIMAL(5, 2)", 7, Decimal("7.00")),
        ("DECIMAL(38, 0)", "9" * 38, Decimal("9" * 38)),
        ("DECIMAL(38, 38)", "0." + "1" * 38, Decimal("0." + "1" * 38)),
        ("STRING", "héllo", "héllo"),
        ("VARCHAR(3)", "abc", "abc"),
        ("CHAR(2)", "ab", "ab"),
        ("BYTES", "AAH/", b"\x00\x01\xff"),
        ("BINARY(3)", "AAH/", b"\x00\x01\xff"),
        ("DATE", "2024-01-01", date(2024, 1, 1)),
        ("DATE", "0001-01-01", date(1, 1, 1)),
        ("TIME", "23:59:59", time(23, 59, 59)),
        ("TIME(3)", "01:02:03.456", time(1, 2, 3, 456000)),
        ("TIME(3)", "01:02:03.4560000", time(1, 2, 3, 456000)),
        ("TIMESTAMP(6)", "2024-01-01T12:30:00.123456", datetime(2024, 1, 1, 12, 30, 0, 123456)),
        ("TIMESTAMP(3)", "2024-01-01T12:30:00.120", datetime(2024, 1, 1, 12, 30, 0, 120000)),
        ("TIMESTAMP(0)", "1969-12-31T23:59:59", datetime(1969, 12, 31, 23, 59, 59)),
        ("TIMESTAMP(9)", "2024-01-01T00:00:00.123456000", datetime(2024, 1, 1, 0, 0, 0, 123456)),
        ("TIMESTAMP_LTZ(3)", "2024-01-01T00:00:00.001", datetime(2024, 1, 1, 0, 0, 0, 1000)),
        ("INT", None, None),
    ],
)
def test_good_values(type_text: str, wire: object, python: object) -> None:
    t = parse_type(type_text)
    value = from_json_value(wire, t, field="col")
    assert value == python
    assert type(value) is type(python)
    # The value is what encode_row needs, and converting back gives the canonical wire spelling.
    assert decode_row(encode_row([value], [t]), [t]) == [python]
    back = to_json_value(value, t)
    assert from_json_value(back, t, field="col") == python


def test_decimal_keeps_scale_when_written_back() -> None:
    t = parse_type("DECIMAL(10, 3)")
    assert to_json_value(from_json_value("1.5", t, field="amount"), t) == "1.500"
    assert to_json_value(Decimal("-0.000"), t) == "0.000"
    assert to_json_value(from_json_value("1e-3", t, field="amount"), t) == "0.001"


def test_other_wire_forms() -> None:
    assert to_json_value(b"\x00\x01\xff", DataType("BYTES")) == "AAH/"
    assert to_json_value(date(2024, 1, 1), DataType("DATE")) == "2024-01-01"
    assert to_json_value(time(1, 2, 3), DataType("TIME")) == "01:02:03"
    ts = DataType("TIMESTAMP", precision=6)
    assert to_json_value(datetime(2024, 1, 1, 1, 2, 3, 4), ts) == "2024-01-01T01:02:03.000004"
    ltz = DataType("TIMESTAMP_LTZ", precision=3)
    aware = datetime(2024, 1, 1, 1, 0, tzinfo=timezone.utc)
    assert to_json_value(aware, ltz) == "2024-01-01T01:00:00"
    assert to_json_value(None, DataType("INT", nullable=False)) is None
    with pytest.raises(ValueError, match="cannot convert str"):
        to_json_value("1", DataType("INT"))
    with pytest.raises(ValueError, match="must be naive"):
        to_json_value(aware, ts)


@pytest.mark.parametrize(
    ("type_text", "wire", "message"),
    [
        ("INT NOT NULL", None, "null for a NOT NULL field"),
        ("BOOLEAN", 1, "got int"),
        ("BOOLEAN", "true", "got str"),
        ("INT", True, "got bool"),
        ("INT", 1.0, "got float"),
        ("INT", "1", "got str"),
        ("INT", 2**31, "outside"),
        ("TINYINT", -129, "outside"),
        ("SMALLINT", 32768, "outside"),
        ("BIGINT", 2**63, "outside"),
        ("FLOAT", "1.5", "got str"),
        ("FLOAT", False, "got bool"),
        ("FLOAT", 3.5e38, "overflows a 32-bit float"),
        ("DOUBLE", 10**400, "too large"),
        ("DECIMAL(5, 2)", 1.5, "lossy"),
        ("DECIMAL(5, 2)", "1.234", "more than 2 fractional digits"),
        ("DECIMAL(5, 2)", "1000", "does not fit"),
        ("DECIMAL(5, 2)", "abc", "not a decimal number"),
        ("DECIMAL(5, 2)", " 1", "not a decimal number"),
        ("DECIMAL(5, 2)", "1_0", "not a decimal number"),
        ("DECIMAL(5, 2)", "NaN", "not a decimal number"),
        ("DECIMAL(5, 2)", "1e999999999", "does not fit"),
        ("DECIMAL(5, 2)", "1e-999999999", "more than 2 fractional digits"),
        ("DECIMAL(5, 2)", True, "lossy|got bool"),
        ("DECIMAL(5, 2)", [1], "got list"),
        ("STRING", 1, "got int"),
        ("VARCHAR(3)", "abcd", "exceeds length 3"),
        ("CHAR(2)", "abc", "exceeds length 2"),
        ("BYTES", "not base64!", "not valid base64"),
        ("BYTES", "AAE", "not valid base64"),
        ("BYTES", b"\x00", "base64 string required"),
        ("BINARY(2)", "AAH/", "exceeds length 2"),
        ("DATE", "2024-1-1", "'YYYY-MM-DD'"),
        ("DATE", "2024-02-30", "not a valid date"),
        ("DATE", 19723, "'YYYY-MM-DD'"),
        ("TIME", "25:00:00", "not a valid time"),
        ("TIME", "12:00", "'HH:MM:SS"),
        ("TIME", "12:00:00.5", "more than 0 significant digits"),
        ("TIME(3)", "12:00:00.0001", "more than 3 significant digits"),
        ("TIMESTAMP(6)", "2024-01-01 00:00:00", "without offset required"),
        ("TIMESTAMP(6)", "2024-01-01T00:00:00Z", "without offset required"),
        ("TIMESTAMP(6)", "2024-01-01T00:00:00+01:00", "without offset required"),
        ("TIMESTAMP(6)", "2024-13-01T00:00:00", "not a valid timestamp"),
        ("TIMESTAMP(3)", "2024-01-01T00:00:00.0001", "more than 3 significant digits"),
        ("TIMESTAMP(9)", "2024-01-01T00:00:00.000000001", "sub-microsecond"),
        ("TIMESTAMP_LTZ(0)", 1704067200, "without offset required"),
    ],
)
def test_bad_values_name_field_and_type(type_text: str, wire: object, message: str) -> None:
    t = parse_type(type_text)
    with pytest.raises(ValueError, match=message) as info:
        from_json_value(wire, t, field="my_col")
    assert str(info.value).startswith(f"field 'my_col': expected {t}")


def _fit_to_type(t: DataType, value: object) -> tuple[DataType, object]:
    """Widen length limits and trim fractions so the random row is valid for the strict JSON checks."""
    if t.max_length is not None:
        return replace(t, length=100), value
    if t.root == "TIME":
        return replace(t, precision=3), value
    if t.is_timestamp and isinstance(value, datetime) and t.time_precision < 6:
        unit = 10 ** (6 - t.time_precision)
        return t, value.replace(microsecond=value.microsecond // unit * unit)
    return t, value


@settings(max_examples=150, deadline=None)
@given(typed_rows())
def test_json_round_trip_through_text(row: tuple[list[DataType], list[object]]) -> None:
    fitted = [_fit_to_type(t, v) for t, v in zip(*row, strict=True)]
    types = [t for t, _ in fitted]
    values = [v for _, v in fitted]
    wire = json.loads(json.dumps([to_json_value(v, t) for v, t in zip(values, types, strict=True)]))
    back = [from_json_value(w, t, field=f"f{i}") for i, (w, t) in enumerate(zip(wire, types, strict=True))]
    assert back == values
