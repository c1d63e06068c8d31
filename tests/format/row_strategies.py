"""Hypothesis strategies for BinaryRow tests: Paimon data types and values that round-trip exactly."""

from __future__ import annotations

from datetime import datetime
from decimal import Context, Decimal

from hypothesis import strategies as st

from paimon_format.types import DataType

_WIDE = Context(prec=100)


def _decimal_type(draw: st.DrawFn) -> DataType:
    kind = draw(st.sampled_from(["compact", "big"]))
    precision = draw(st.integers(1, 18) if kind == "compact" else st.integers(19, 38))
    return DataType("DECIMAL", precision=precision, scale=draw(st.integers(0, precision)))


@st.composite
def data_types(draw: st.DrawFn) -> DataType:
    root = draw(
        st.sampled_from(
            [
                "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL",
                "CHAR", "VARCHAR", "STRING", "BINARY", "VARBINARY", "BYTES", "DATE", "TIME",
                "TIMESTAMP", "TIMESTAMP_LTZ",
            ]
        )
    )  # fmt: skip
    nullable = draw(st.booleans())
    if root == "DECIMAL":
        t = _decimal_type(draw)
    elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        t = DataType(root, precision=draw(st.integers(0, 9)))
    elif root == "TIME":
        t = DataType(root, precision=draw(st.integers(0, 3)))
    elif root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        t = DataType(root, length=draw(st.integers(1, 100)))
    else:
        t = DataType(root)
    return t.with_nullable(nullable)


_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
# Unscaled values -2**(8k-1) are where a naive two's-complement length and Java's disagree.
_EDGE_UNSCALED = [0, 1, -1, 127, -128, 128, -129, 255, 256, -32768, -(2**63), 2**63 - 1, -(2**119)]


def _decimal_values(t: DataType) -> st.SearchStrategy[Decimal]:
    bound = 10**t.decimal_precision - 1
    edges = [u for u in _EDGE_UNSCALED if -bound <= u <= bound]
    unscaled = st.one_of(st.integers(-bound, bound), st.sampled_from(edges), st.just(bound), st.just(-bound))
    return unscaled.map(lambda u: Decimal(u).scaleb(-t.decimal_scale, _WIDE))


def _timestamps(t: DataType) -> st.SearchStrategy[datetime]:
    base = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30))
    if t.time_precision <= 3:
        # Only millis fit a compact timestamp; finer digits would not round-trip.
        return base.map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
    return base


def values_for(t: DataType) -> st.SearchStrategy[object]:
    """Python values encode_row accepts for `t` that survive a round trip exactly."""
    root = t.root
    strategy: st.SearchStrategy[object]
    if root == "BOOLEAN":
        strategy = st.booleans()
    elif root in _INT_BITS:
        bits = _INT_BITS[root]
        strategy = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    elif root == "FLOAT":
        strategy = st.floats(width=32, allow_nan=False)
    elif root == "DOUBLE":
        strategy = st.floats(allow_nan=False)
    elif t.is_decimal:
        strategy = _decimal_values(t)
    elif t.is_string:
        # Mix short (inline, <= 7 UTF-8 bytes) and long values, with multi-byte characters.
        strategy = st.one_of(st.text(max_size=3), st.text(min_size=4, max_size=30), st.just("é€😀"))
    elif t.is_binary:
        strategy = st.one_of(st.binary(max_size=7), st.binary(min_size=8, max_size=40))
    elif root == "DATE":
        strategy = st.dates()
    elif root == "TIME":
        strategy = st.times().map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000))
    else:
        strategy = _timestamps(t)
    return st.one_of(st.none(), strategy) if t.nullable else strategy


@st.composite
def typed_rows(draw: st.DrawFn, max_arity: int = 12) -> tuple[list[DataType], list[object]]:
    types = draw(st.lists(data_types(), min_size=0, max_size=max_arity))
    return types, [draw(values_for(t)) for t in types]
