"""Spark's pushed filters turned into what prunes a scan: partitions and, on primary-key tables, files.

A filter on one partition column is decided per partition: every row of a partition has the same value,
so the partition is read only when the filter is true for it (three-valued, as SQL: a null partition
value makes `dt = 'a'` and `NOT dt = 'a'` unknown, and unknown drops the row). Spark need not evaluate such
a filter again. Equalities and INs on partition keys also become the coordinator's partition filter, so
the service reads only the manifests that may hold them.

A filter on a primary-key column prunes files by the file's min/max key statistics. That is partial (a
file in range may still lack the key), so Spark evaluates it again. Pruning a file of a bucket never
changes the merge for the keys the filter keeps: all versions of such a key lie outside the pruned file.

Values are compared as the column's Paimon type: Spark's Python literal is checked against the type
(an int for integers, Decimal for decimals, date, naive datetime for TIMESTAMP, aware for TIMESTAMP_LTZ,
str, bytes) and the coordinator's JSON values are converted with `from_json_value`. A filter whose value
does not fit the type, or on FLOAT/DOUBLE (NaN and -0.0 order differently in Spark), prunes nothing.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any, cast

from pydantic import JsonValue
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from coordinator_client.models import LiveFileModel
from coordinator_client.spark.layout import SparkTable
from paimon_format.types import DataType
from paimon_format.values import from_json_value, to_json_value

MAX_PARTITION_REQUESTS = 64
"""At most this many partition filters (one scan-plan request each) go to the coordinator: the cross
product of the equalities and INs on partition keys, cut to the keys (in order) that fit."""

_UNFIT = object()
"""A filter value that does not fit the column's type: the filter prunes nothing."""

_COMPARISONS = (GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)
_STRINGS = (StringStartsWith, StringEndsWith, StringContains)


def _fit(value: object, t: DataType) -> object:
    """`value` (a Spark filter's Python literal) as the Python value of Paimon type `t`, or _UNFIT."""
    if value is None:
        return None
    if t.root == "BOOLEAN":
        return value if isinstance(value, bool) else _UNFIT
    if isinstance(value, bool):
        return _UNFIT
    if t.is_integer:
        return value if isinstance(value, int) else _UNFIT
    if t.is_decimal:
        return Decimal(value) if isinstance(value, (int, Decimal)) else _UNFIT
    if t.is_string:
        return value if isinstance(value, str) else _UNFIT
    if t.is_binary:
        return bytes(value) if isinstance(value, (bytes, bytearray)) else _UNFIT
    if t.root == "DATE":
        return value if isinstance(value, date) and not isinstance(value, datetime) else _UNFIT
    if t.is_timestamp and isinstance(value, datetime):
        aware = value.tzinfo is not None
        if t.root == "TIMESTAMP_LTZ" and aware:  # stored as UTC wall time
            return value.astimezone(timezone.utc).replace(tzinfo=None)
        return value if t.root != "TIMESTAMP_LTZ" and not aware else _UNFIT
    return _UNFIT


def _fitted(f: Filter, types: Mapping[str, DataType]) -> Filter | None:
    """`f` with its values in the Python values of its column's Paimon type; None when it cannot be
    decided here (another shape, a nested or unknown column, a value that does not fit)."""
    if isinstance(f, Not):
        child = _fitted(f.child, types)
        return None if child is None else Not(child)
    attribute: tuple[str, ...] = getattr(f, "attribute", ())
    if len(attribute) != 1 or attribute[0] not in types:
        return None
    t = types[attribute[0]]
    if isinstance(f, (IsNull, IsNotNull)):
        return f
    if t.root in ("FLOAT", "DOUBLE"):
        return None
    if isinstance(f, In):
        values = tuple(_fit(v, t) for v in f.value)
        return None if _UNFIT in values else In(f.attribute, values)
    if isinstance(f, (EqualTo, EqualNullSafe, *_COMPARISONS, *_STRINGS)):
        if isinstance(f, _STRINGS) and not t.is_string:
            return None
        value = _fit(f.value, t)
        if value is _UNFIT or (value is None and not isinstance(f, EqualNullSafe)):
            return None
        return cast(Filter, dataclasses.replace(f, value=cast(Any, value)))
    return None


def _column(f: Filter) -> str:
    while isinstance(f, Not):
        f = f.child
    attribute: tuple[str, ...] = getattr(f, "attribute")  # noqa: B009 -- every fitted leaf has one
    return attribute[0]


def evaluate(f: Filter, value: Any) -> bool | None:
    """A fitted filter on one column, for a column value: True, False or None (SQL's unknown)."""
    if isinstance(f, Not):
        inner = evaluate(f.child, value)
        return None if inner is None else not inner
    if isinstance(f, IsNull):
        return value is None
    if isinstance(f, IsNotNull):
        return value is not None
    if isinstance(f, EqualNullSafe):
        return value == f.value if value is not None and f.value is not None else value is f.value
    if value is None:
        return None
    if isinstance(f, In):
        return True if value in f.value else (None if None in f.value else False)
    v: Any = getattr(f, "value")  # noqa: B009 -- every other fitted leaf has one
    if isinstance(f, EqualTo):
        return bool(value == v)
    if isinstance(f, GreaterThan):
        return bool(value > v)
    if isinstance(f, GreaterThanOrEqual):
        return bool(value >= v)
    if isinstance(f, LessThan):
        return bool(value < v)
    if isinstance(f, LessThanOrEqual):
        return bool(value <= v)
    if isinstance(f, StringStartsWith):
        return bool(value.startswith(v))
    if isinstance(f, StringEndsWith):
        return bool(value.endswith(v))
    if isinstance(f, StringContains):
        return v in value
    raise TypeError(f"not a fitted filter: {f!r}")


def may_hold(f: Filter, low: Any, high: Any) -> bool:
    """Whether a file whose (non-null) key column lies in [low, high] may hold a row `f` keeps."""
    if isinstance(f, (EqualTo, EqualNullSafe)):
        return f.value is not None and low <= f.value <= high
    if isinstance(f, In):
        return any(v is not None and low <= v <= high for v in f.value)
    if isinstance(f, GreaterThan):
        return bool(high > f.value)
    if isinstance(f, GreaterThanOrEqual):
        return bool(high >= f.value)
    if isinstance(f, LessThan):
        return bool(low < f.value)
    if isinstance(f, LessThanOrEqual):
        return bool(low <= f.value)
    return True


@dataclass(frozen=True)
class Pushdown:
    """What the pushed filters prune: picklable, built on the driver, applied there while planning."""

    partition_filters: tuple[Filter, ...] = ()
    """Fitted filters on partition columns, decided per partition."""
    key_filters: tuple[tuple[int, Filter], ...] = ()
    """Fitted filters on trimmed primary-key columns, by the column's position in the key."""
    coordinator_partitions: tuple[dict[str, JsonValue], ...] | None = None
    """The partition filters to send the coordinator (one request each); None: plan all partitions."""

    @classmethod
    def of(cls, layout: SparkTable, filters: Sequence[Filter]) -> tuple[Pushdown, list[Filter]]:
        """The pruning the filters allow, and the filters (the very objects) Spark must still evaluate."""
        partition_types = {k: layout.types[k] for k in layout.partition_keys}
        key_types = {k: layout.types[k] for k in layout.key_names} if layout.has_primary_key else {}
        on_partitions: list[Filter] = []
        on_keys: list[tuple[int, Filter]] = []
        remaining: list[Filter] = []
        for f in filters:
            partition_filter = _fitted(f, partition_types)
            if partition_filter is not None:
                on_partitions.append(partition_filter)
                continue
            remaining.append(f)
            key_filter = _fitted(f, key_types)
            if key_filter is not None and not isinstance(key_filter, Not):
                on_keys.append((layout.key_names.index(_column(key_filter)), key_filter))
        pushdown = cls(tuple(on_partitions), tuple(on_keys), _coordinator_partitions(layout, on_partitions))
        return pushdown, remaining

    def partition_matches(self, layout: SparkTable, partition: Mapping[str, JsonValue]) -> bool:
        """Whether a partition (as the coordinator's plan gives it) is to be read."""
        values = dict(zip(layout.partition_keys, layout.partition_values(partition), strict=True))
        return all(evaluate(f, values[_column(f)]) is True for f in self.partition_filters)

    def file_may_match(self, layout: SparkTable, file: LiveFileModel) -> bool:
        """Whether a primary-key file's key statistics leave room for rows the key filters keep."""
        for position, f in self.key_filters:
            bounds = _key_bounds(layout, file, position)
            if bounds is not None and not may_hold(f, *bounds):
                return False
        return True


def _key_bounds(layout: SparkTable, file: LiveFileModel, position: int) -> tuple[Any, Any] | None:
    """The lowest and highest value of one trimmed key column in a file: its key stats, or for the
    first column the file's min and max key; None when the file does not say."""
    name, t = layout.key_names[position], layout.key_types[position]
    stats = file.key_stats
    if stats is not None and position < len(stats.min_values) and position < len(stats.max_values):
        low, high = stats.min_values[position], stats.max_values[position]
    elif position == 0 and file.min_key and file.max_key:
        low, high = file.min_key[0], file.max_key[0]
    else:
        return None
    if low is None or high is None:
        return None
    return from_json_value(low, t, field=name), from_json_value(high, t, field=name)


def _coordinator_partitions(
    layout: SparkTable, filters: Iterable[Filter]
) -> tuple[dict[str, JsonValue], ...] | None:
    """The partition values the equalities and INs allow, per key, crossed into the coordinator's
    partition filters; () when they allow none, None when they name no key."""
    allowed: dict[str, set[Any]] = {}
    for f in filters:
        if isinstance(f, (EqualTo, EqualNullSafe)) and f.value is not None:
            values = {f.value}
        elif isinstance(f, In):
            values = {v for v in f.value if v is not None}
        else:
            continue
        name = _column(f)
        allowed[name] = allowed[name] & values if name in allowed else values
    chosen: list[tuple[str, list[Any]]] = []
    requests = 1
    for name in layout.partition_keys:
        if name not in allowed:
            continue
        if not allowed[name]:
            return ()
        if requests * len(allowed[name]) > MAX_PARTITION_REQUESTS:
            continue
        requests *= len(allowed[name])
        chosen.append((name, sorted(allowed[name])))
    if not chosen:
        return None
    t = layout.types
    return tuple(
        {
            name: cast(JsonValue, to_json_value(v, t[name]))
            for (name, _), v in zip(chosen, combination, strict=True)
        }
        for combination in itertools.product(*(values for _, values in chosen))
    )
