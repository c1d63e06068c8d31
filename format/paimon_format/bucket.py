"""Paimon's fixed-bucket assignment: BinaryRow.hashCode (murmur3 by words, seed 42) modulo buckets."""

from __future__ import annotations

import struct

__all__ = ["POSTPONE_BUCKET", "bucket_of", "hash_row"]

POSTPONE_BUCKET = -2
_SEED = 42


def hash_row(row: bytes) -> int:
    """Java BinaryRow.hashCode of serialized row bytes (arity prefix skipped), as a signed 32-bit int."""
    body_len = len(row) - 4
    if body_len < 0 or body_len % 4:
        raise ValueError(f"BinaryRow bytes must be 4 + a multiple of 4 long, got {len(row)}")
    h = _SEED
    # One unpack for all words is far cheaper than a struct call per word; the constants are
    # literals (not module globals) so the loop body does no global lookups.
    for k in struct.unpack_from(f"<{body_len >> 2}I", row, 4):
        k = (k * 0xCC9E2D51) & 0xFFFFFFFF
        h ^= (((k << 15) | (k >> 17)) * 0x1B873593) & 0xFFFFFFFF
        # Bits above 32 left by the rotations vanish in the final mask (arithmetic is mod 2**32).
        h = (((h << 13) | (h >> 19)) * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= body_len
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def bucket_of(row: bytes, num_buckets: int) -> int:
    """Bucket of a bucket-key BinaryRow: Java's Math.abs(hashCode % numBuckets)."""
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")
    # |Java remainder| equals |hash| mod n, because the remainder takes the dividend's sign.
    return abs(hash_row(row)) % num_buckets
