"""Paimon's MemorySize grammar: the table of cases, and agreement with pypaimon's own parser."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pypaimon.common.memory_size import MemorySize

from paimon_format.memory_size import parse_memory_size

KIB, MIB, GIB, TIB = 1 << 10, 1 << 20, 1 << 30, 1 << 40
UNITS = ["", "b", "bytes", "k", "kb", "kibibytes", "m", "mb", "mebibytes"]
UNITS += ["g", "gb", "gibibytes", "t", "tb", "tebibytes"]


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("0", 0),
        ("1024", 1024),
        ("7 b", 7),
        ("7 bytes", 7),
        ("2 kb", 2 * KIB),
        ("2k", 2 * KIB),
        ("2 kibibytes", 2 * KIB),
        ("8 mb", 8 * MIB),
        ("16MB", 16 * MIB),
        ("128 Mebibytes", 128 * MIB),
        ("1 g", GIB),
        ("3 GiBiBytes", 3 * GIB),
        ("1 t", TIB),  # the client accepted it and the service did not
        ("1 tb", TIB),
        ("1 tebibytes", TIB),
        ("  256 \t mb \n", 256 * MIB),
        ("9223372036854775807", 2**63 - 1),
        ("8388607 tb", 8388607 * TIB),
    ],
)
def test_parses(text: str, size: int) -> None:
    assert parse_memory_size(text) == size


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "does not start with a number"),
        ("   ", "does not start with a number"),
        ("mb", "does not start with a number"),
        ("-1 mb", "does not start with a number"),
        ("1.5 mb", "units are"),
        ("1 pb", "units are"),
        ("1 kib", "units are"),
        ("1 m b", "units are"),
        ("8388608 tb", "64-bit"),
        ("9223372036854775808", "64-bit"),
    ],
)
def test_rejects(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_memory_size(text)


@given(
    number=st.integers(0, 2**20),
    unit=st.sampled_from(UNITS),
    upper=st.lists(st.booleans(), min_size=9, max_size=9),
    gap=st.sampled_from(["", " ", "  ", "\t"]),
)
def test_agrees_with_pypaimon(number: int, unit: str, upper: list[bool], gap: str) -> None:
    cased = "".join(c.upper() if up else c for c, up in zip(unit, upper[: len(unit)], strict=True))
    text = f" {number}{gap}{cased} "
    assert parse_memory_size(text) == MemorySize.parse_bytes(text)
