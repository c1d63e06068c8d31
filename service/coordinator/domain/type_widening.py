"""Which column type changes every reader of a Paimon table can apply to files written before them.

A file keeps the type it was written with; a reader (Java Paimon, pypaimon, our Spark reader) casts its
values to the table's current type. Only casts that lose nothing and that each of them performs are
allowed, so the rule is a short list rather than Paimon's full cast matrix (which admits e.g. STRING to
INT, failing at read time on a value that does not parse):

- TINYINT < SMALLINT < INT < BIGINT
- FLOAT to DOUBLE
- DECIMAL(p, s) to DECIMAL(q, s) with q >= p
- CHAR(n) or VARCHAR(n) to VARCHAR(m) with m >= n, or to STRING

Nullability is decided apart (NOT NULL to NULL only); callers compare the types as nullable.
"""

from __future__ import annotations

from paimon_format.types import MAX_LENGTH, DataType

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")


def widens(old: DataType, new: DataType) -> bool:
    """True when `new` is `old` or a type every reader widens `old` values to without loss."""
    if old == new:
        return True
    if old.root in _INTEGERS and new.root in _INTEGERS:
        return _INTEGERS.index(old.root) <= _INTEGERS.index(new.root)
    if (old.root, new.root) == ("FLOAT", "DOUBLE"):
        return True
    if old.is_decimal and new.is_decimal:
        return old.decimal_scale == new.decimal_scale and old.decimal_precision <= new.decimal_precision
    if old.root in ("CHAR", "VARCHAR") and new.root in ("VARCHAR", "STRING"):
        return _length(old) <= _length(new)
    return False


def _length(t: DataType) -> int:
    return MAX_LENGTH if t.root == "STRING" else t.max_length or 0
