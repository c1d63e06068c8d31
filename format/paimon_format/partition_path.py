"""Partition and bucket directory names, spelled the way Paimon (and pypaimon's reader) resolve them."""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from datetime import date, datetime, time, timezone

from paimon_format.binary_row import decimal_to_unscaled, unscaled_to_decimal
from paimon_format.bucket import POSTPONE_BUCKET
from paimon_format.types import DataType

__all__ = [
    "DEFAULT_PARTITION_NAME",
    "bucket_dir",
    "escape_path_name",
    "java_floating_text",
    "partition_path",
    "partition_value_text",
]

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"

# Java PartitionPathUtils.CHAR_TO_ESCAPE: control characters plus these; everything else (space,
# non-ASCII) is kept verbatim.
_ESCAPED = [*range(0x20), 0x7F, *map(ord, "\"#%'*/:=?\\{}[]^")]
_ESCAPE_TABLE = {c: f"%{c:02X}" for c in _ESCAPED}
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_FLOAT32 = struct.Struct("<f")
_FLOAT64 = struct.Struct("<d")


def escape_path_name(text: str) -> str:
    """Escape one partition key or value as Java's PartitionPathUtils.escapePathName does."""
    return text.translate(_ESCAPE_TABLE)


def bucket_dir(bucket: int) -> str:
    """Directory of a bucket: 'bucket-N', or 'bucket-postpone' for the postpone bucket (-2)."""
    if bucket == POSTPONE_BUCKET:
        return "bucket-postpone"
    if isinstance(bucket, bool) or not isinstance(bucket, int) or bucket < 0:
        raise ValueError(f"invalid bucket {bucket!r}")
    return f"bucket-{bucket}"


def partition_path(
    names: Sequence[str],
    values: Sequence[object],
    types: Sequence[DataType],
    *,
    default_name: str = DEFAULT_PARTITION_NAME,
    legacy_name: bool = True,
) -> str:
    """Relative partition directory 'k1=v1/k2=v2' ('' when unpartitioned), escaped like Paimon."""
    if not len(names) == len(values) == len(types):
        raise ValueError(f"{len(names)} partition keys, {len(values)} values and {len(types)} types")
    parts = []
    for name, value, t in zip(names, values, types, strict=True):
        if not name:
            raise ValueError("partition key name must not be empty")
        text = partition_value_text(value, t, legacy_name=legacy_name)
        if text is None:
            text = default_name
        parts.append(f"{escape_path_name(name)}={escape_path_name(text)}")
    return "/".join(parts)


def partition_value_text(value: object, t: DataType, *, legacy_name: bool = True) -> str | None:
    """Unescaped directory text of one partition value; None means 'use the default partition name'."""
    if value is None:
        return None
    try:
        text = _render(value, t, legacy_name)
    except (TypeError, AttributeError) as exc:
        raise ValueError(f"partition value {value!r} does not match type {t}: {exc}") from None
    # pypaimon's reader tests with str.isspace(); Java's Character.isWhitespace differs on a few
    # characters (U+0085, U+00A0, U+2007, U+202F). We follow the reader (see report).
    if not text or text.isspace():
        return None
    return text


def _render(value: object, t: DataType, legacy: bool) -> str:
    root = t.root
    if root == "BOOLEAN":
        if not isinstance(value, bool):
            raise TypeError("expected bool")
        return "true" if value else "false"
    if t.is_integer:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError("expected int")
        return str(value)
    if root in ("FLOAT", "DOUBLE"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("expected float")
        return java_floating_text(float(value), single=root == "FLOAT")
    if t.is_decimal:
        unscaled = decimal_to_unscaled(value, t.decimal_precision, t.decimal_scale)
        # Java's Decimal.toString is BigDecimal.toPlainString at the column's scale, e.g. 1.50.
        return format(unscaled_to_decimal(unscaled, t.decimal_scale), "f")
    if t.is_string:
        if not isinstance(value, str):
            raise TypeError("expected str")
        return value
    if t.is_binary:
        # Java would write byte[].toString() (an identity hash) and pypaimon Python's bytes repr:
        # no directory name is readable by both, so refuse rather than invent one.
        raise ValueError(f"binary partition keys are not supported ({t})")
    if root == "DATE":
        if not isinstance(value, date) or isinstance(value, datetime):
            raise TypeError("expected datetime.date")
        return str(value.toordinal() - _EPOCH_ORDINAL) if legacy else value.isoformat()
    if root == "TIME":
        if not isinstance(value, time):
            raise TypeError("expected datetime.time")
        millis = value.microsecond // 1000
        if legacy:
            return str(((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + millis)
        return _time_text(value, millis, t.time_precision)
    if t.is_timestamp:
        return _timestamp_text(value, t, legacy)
    raise ValueError(f"unsupported partition type {t}")


def _timestamp_text(value: object, t: DataType, legacy: bool) -> str:
    if not isinstance(value, datetime):
        raise TypeError("expected datetime.datetime")
    if value.tzinfo is not None:
        if t.root != "TIMESTAMP_LTZ":
            raise ValueError("TIMESTAMP partition values must be naive datetimes")
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    if legacy:
        return _local_date_time_text(value)
    if t.root == "TIMESTAMP_LTZ":
        # The non-legacy cast renders an instant in the writer's default time zone (the JVM's for
        # Java, the process's for pypaimon), so this is only stable between like-configured hosts.
        value = value.replace(tzinfo=timezone.utc).astimezone().replace(tzinfo=None)
    return _sql_timestamp_text(value, t.time_precision)


def _local_date_time_text(value: datetime) -> str:
    # Java LocalDateTime.toString: seconds only when non-zero, fraction in groups of 3 digits.
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}"
    micros = value.microsecond
    if value.second or micros:
        text += f":{value.second:02d}"
    if micros:
        text += f".{micros // 1000:03d}" if micros % 1000 == 0 else f".{micros:06d}"
    return text


def _sql_timestamp_text(value: datetime, precision: int) -> str:
    # Paimon's DateTimeUtils.formatTimestamp: nine fraction digits, trailing zeros trimmed while
    # more than `precision` digits remain.
    text = (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
        f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    )
    fraction = f"{value.microsecond * 1000:09d}"
    keep = len(fraction.rstrip("0"))
    fraction = fraction[: max(keep, precision)]
    return f"{text}.{fraction}" if fraction else text


def _time_text(value: time, millis: int, precision: int) -> str:
    # Paimon's DateTimeUtils.formatTimestampMillis: emit millisecond digits one at a time until
    # `precision` digits are out or only zeros remain (so 101 ms at precision 2 gives ".10").
    text = f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if precision <= 0:
        return text
    digits = []
    remaining = precision
    while remaining > 0:
        digits.append(str(millis // 100))
        millis = millis % 100 * 10
        if millis == 0:
            break
        remaining -= 1
    return text + "." + "".join(digits)


def java_floating_text(value: float, *, single: bool) -> str:
    """Float/Double.toString as JDK 19+ prints it (shortest round-trip digits, at least two)."""
    if not math.isfinite(value):
        # pypaimon's reader spells these 'nan'/'inf'/'-inf'; Java writes NaN/Infinity (see report).
        return str(value)
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    codec = _FLOAT32 if single else _FLOAT64
    # Round to the storage width first so a FLOAT is named by its float32 value.
    magnitude = abs(codec.unpack(codec.pack(value))[0])
    bits = codec.pack(magnitude)
    for digits in range(2, 10 if single else 18):
        text = f"{magnitude:.{digits - 1}e}"
        try:
            if codec.pack(float(text)) != bits:
                continue
        except OverflowError:
            continue
        mantissa, exp_text = text.split("e")
        return ("-" if value < 0 else "") + _java_decimal_layout(mantissa.replace(".", ""), int(exp_text))
    return str(value)


def _java_decimal_layout(digits: str, exponent: int) -> str:
    # `digits` are the significant digits d1 d2 ... of d1.d2... x 10**exponent.
    digits = digits.rstrip("0") or "0"
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole = digits[: exponent + 1].ljust(exponent + 1, "0")
            return f"{whole}.{digits[exponent + 1 :] or '0'}"
        return "0." + "0" * (-exponent - 1) + digits
    return f"{digits[0]}.{digits[1:] or '0'}E{exponent}"
