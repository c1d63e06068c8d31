"""JSON wire values <-> the Python values encode_row expects, checked strictly against a DataType."""

from __future__ import annotations

import base64
import binascii
import math
import re
from datetime import date, datetime, time, timezone
from decimal import Decimal

from paimon_format.binary_row import decimal_to_unscaled, unscaled_to_decimal
from paimon_format.types import DataType

__all__ = ["from_json_value", "to_json_value"]

_FLOAT32_MAX = 3.4028234663852886e38
# Largest finite double that still rounds to float32 max rather than overflowing to infinity.
_FLOAT32_LIMIT = 3.4028235677973366e38
_DECIMAL_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME_RE = re.compile(r"(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?")
_TIMESTAMP_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?")
_BASE64_RE = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def _fail(field: str, t: DataType, problem: str) -> ValueError:
    return ValueError(f"field {field!r}: expected {t}, {problem}")


def _describe(value: object) -> str:
    text = repr(value)
    return f"got {type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def from_json_value(value: object, t: DataType, *, field: str) -> object:
    """Convert a json.loads value to the Python value for type `t`; ValueError naming `field` if invalid."""
    if value is None:
        if not t.nullable:
            raise _fail(field, t, "got null for a NOT NULL field")
        return None
    root = t.root
    if root == "BOOLEAN":
        if not isinstance(value, bool):
            raise _fail(field, t, _describe(value))
        return value
    if t.is_integer:
        return _integer(value, t, field)
    if root in ("FLOAT", "DOUBLE"):
        return _floating(value, t, field)
    if t.is_decimal:
        return _decimal(value, t, field)
    if t.is_string:
        if not isinstance(value, str):
            raise _fail(field, t, _describe(value))
        _check_length(len(value), t, field, "characters")
        return value
    if t.is_binary:
        return _binary(value, t, field)
    if root == "DATE":
        return _date(value, t, field)
    if root == "TIME":
        return _time(value, t, field)
    if t.is_timestamp:
        return _timestamp(value, t, field)
    raise _fail(field, t, "type is not supported")


def _integer(value: object, t: DataType, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(field, t, _describe(value))
    low, high = t.int_range
    if not low <= value <= high:
        raise _fail(field, t, f"{value} is outside [{low}, {high}]")
    return value


def _floating(value: object, t: DataType, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(field, t, _describe(value))
    try:
        result = float(value)
    except OverflowError:
        raise _fail(field, t, f"{value} is too large") from None
    if t.root == "FLOAT" and math.isfinite(result) and abs(result) >= _FLOAT32_LIMIT:
        raise _fail(field, t, f"{value} overflows a 32-bit float (max {_FLOAT32_MAX})")
    return result


def _decimal(value: object, t: DataType, field: str) -> Decimal:
    if isinstance(value, bool) or isinstance(value, float):
        raise _fail(field, t, "got a JSON float, which is lossy; send decimals as strings")
    if isinstance(value, int):
        parsed = Decimal(value)
    elif isinstance(value, str):
        if not _DECIMAL_RE.fullmatch(value):
            raise _fail(field, t, f"{value!r} is not a decimal number")
        parsed = Decimal(value)
    else:
        raise _fail(field, t, _describe(value))
    try:
        unscaled = decimal_to_unscaled(parsed, t.decimal_precision, t.decimal_scale)
    except ValueError as exc:
        raise _fail(field, t, str(exc)) from None
    # Canonical form: exactly `scale` fractional digits, so to_json_value round-trips to one spelling.
    return unscaled_to_decimal(unscaled, t.decimal_scale)


def _binary(value: object, t: DataType, field: str) -> bytes:
    if not isinstance(value, str):
        raise _fail(field, t, f"base64 string required, {_describe(value)}")
    if not _BASE64_RE.fullmatch(value):
        raise _fail(field, t, "value is not valid base64")
    try:
        raw = base64.b64decode(value, validate=True)
    except binascii.Error:
        raise _fail(field, t, "value is not valid base64") from None
    _check_length(len(raw), t, field, "bytes")
    return raw


def _check_length(n: int, t: DataType, field: str, unit: str) -> None:
    limit = t.max_length
    if limit is not None and n > limit:
        raise _fail(field, t, f"{n} {unit} exceeds length {limit}")


def _date(value: object, t: DataType, field: str) -> date:
    match = _DATE_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise _fail(field, t, f"'YYYY-MM-DD' string required, {_describe(value)}")
    try:
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError as exc:
        raise _fail(field, t, f"{value!r} is not a valid date: {exc}") from None


def _fraction_micros(digits: str | None, precision: int, t: DataType, field: str) -> int:
    """Microseconds of a fraction string, refusing digits the type (or Python) cannot hold."""
    if not digits:
        return 0
    if digits[precision:].strip("0"):
        raise _fail(field, t, f"fraction .{digits} has more than {precision} significant digits")
    if digits[6:].strip("0"):
        raise _fail(field, t, f"fraction .{digits}: sub-microsecond values are not supported")
    return int(digits[:6].ljust(6, "0"))


def _time(value: object, t: DataType, field: str) -> time:
    match = _TIME_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise _fail(field, t, f"'HH:MM:SS[.fff]' string required, {_describe(value)}")
    # Paimon stores TIME as int milliseconds, so finer digits would be silently lost: refuse them.
    micros = _fraction_micros(match[4], min(t.time_precision, 3), t, field)
    try:
        return time(int(match[1]), int(match[2]), int(match[3]), micros)
    except ValueError as exc:
        raise _fail(field, t, f"{value!r} is not a valid time: {exc}") from None


def _timestamp(value: object, t: DataType, field: str) -> datetime:
    match = _TIMESTAMP_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        expected = "'YYYY-MM-DDTHH:MM:SS[.ffffff]' string without offset required"
        raise _fail(field, t, f"{expected}, {_describe(value)}")
    micros = _fraction_micros(match[7], t.time_precision, t, field)
    try:
        year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
        return datetime(year, month, day, hour, minute, second, micros)
    except ValueError as exc:
        raise _fail(field, t, f"{value!r} is not a valid timestamp: {exc}") from None


def to_json_value(value: object, t: DataType) -> object:
    """Convert a Python value of type `t` (as decode_row returns it) to its JSON wire form."""
    if value is None:
        return None
    root = t.root
    if root == "BOOLEAN" and isinstance(value, bool):
        return value
    if t.is_integer and isinstance(value, int) and not isinstance(value, bool):
        return value
    if root in ("FLOAT", "DOUBLE") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if t.is_decimal and isinstance(value, (Decimal, int)) and not isinstance(value, bool):
        unscaled = decimal_to_unscaled(value, t.decimal_precision, t.decimal_scale)
        return format(unscaled_to_decimal(unscaled, t.decimal_scale), "f")
    if t.is_string and isinstance(value, str):
        return value
    if t.is_binary and isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if root == "DATE" and isinstance(value, date) and not isinstance(value, datetime):
        return value.isoformat()
    if root == "TIME" and isinstance(value, time):
        return value.isoformat()
    if t.is_timestamp and isinstance(value, datetime):
        if value.tzinfo is not None:
            if root != "TIMESTAMP_LTZ":
                raise ValueError(f"TIMESTAMP value must be naive, got {value!r}")
            value = value.astimezone(timezone.utc).replace(tzinfo=None)
        return value.isoformat()
    raise ValueError(f"cannot convert {type(value).__name__} {value!r} to JSON as {t}")
