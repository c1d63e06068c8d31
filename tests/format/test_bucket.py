"""Bucket assignment agrees with pypaimon's fixed-bucket writer (its FixedBucketRowKeyExtractor)."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pypaimon.write.row_key_extractor import _hash_bytes_by_words

from paimon_format.binary_row import encode_row
from paimon_format.bucket import bucket_of, hash_row
from paimon_format.types import DataType
from tests.format.bucket_kinds import KEY_KINDS, pypaimon_buckets


@st.composite
def keyed_rows(draw: st.DrawFn) -> tuple[list[str], list[list[object]], int]:
    kinds = draw(st.lists(st.sampled_from(sorted(KEY_KINDS)), min_size=1, max_size=4))
    rows = draw(st.lists(st.tuples(*(KEY_KINDS[k][2] for k in kinds)).map(list), min_size=1, max_size=8))
    return kinds, rows, draw(st.integers(1, 64))


@settings(max_examples=150, deadline=None)
@given(keyed_rows())
def test_bucket_matches_pypaimon_writer(case: tuple[list[str], list[list[object]], int]) -> None:
    kinds, rows, num_buckets = case
    # Primary-key columns are NOT NULL in the table; nullability does not change the bytes anyway.
    types = [KEY_KINDS[k][0].not_null() for k in kinds]
    ours = [bucket_of(encode_row(row, types), num_buckets) for row in rows]
    assert ours == pypaimon_buckets(kinds, rows, num_buckets)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200).map(lambda b: b[: len(b) // 4 * 4]))
def test_hash_matches_pypaimon_murmur_on_any_words(body: bytes) -> None:
    unsigned = _hash_bytes_by_words(body)
    expected = unsigned - 2**32 if unsigned >= 2**31 else unsigned
    assert hash_row(b"\x00\x00\x00\x01" + body) == expected


def test_hash_is_a_signed_java_int_and_ignores_the_arity_prefix() -> None:
    row = encode_row(["2024-01-01"], [DataType("STRING")])
    h = hash_row(row)
    assert -(2**31) <= h < 2**31
    assert hash_row(b"\xff\xff\xff\xff" + row[4:]) == h


def test_negative_hash_uses_java_remainder() -> None:
    # Find a key whose hash is negative and not a multiple of 7: Python's % would differ from Java's.
    types = [DataType("INT")]
    for key in range(1000):
        h = hash_row(encode_row([key], types))
        if h < 0 and h % 7:
            break
    else:
        pytest.fail("no negative hash found")
    bucket = bucket_of(encode_row([key], types), 7)
    assert bucket == -(h - int(h / 7) * 7)  # Math.abs(h % 7) with Java's truncating remainder
    assert bucket != h % 7  # Python's floored modulo would pick another bucket


def test_single_bucket_and_bad_counts() -> None:
    row = encode_row([date(2024, 1, 1)], [DataType("DATE")])
    assert bucket_of(row, 1) == 0
    with pytest.raises(ValueError, match="positive"):
        bucket_of(row, 0)
    with pytest.raises(ValueError, match="multiple of 4"):
        hash_row(b"\x00\x00\x00\x00\x01")
