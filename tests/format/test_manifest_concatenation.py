"""A minor merge joins manifests by their Avro blocks: full blocks are copied still compressed, small
ones joined into full ones, and anything that is not ours to copy is left to the decoding merge."""

from __future__ import annotations

import io

import fastavro
import pytest

from paimon_format.avro_container import RawBlock, raw_blocks, read_header
from paimon_format.manifest import ManifestEntry, concatenate_manifests, decode_manifest, encode_manifest
from tests.support.builders import ADD, entry


def small_manifests(first: int, count: int) -> tuple[list[bytes], list[ManifestEntry]]:
    """`count` one-entry manifests, as a streaming job's commits leave them."""
    entries = [
        entry(ADD, f"data-{i:06d}-{'x' * 40}.parquet", dt=f"2024-01-{i % 28 + 1:02d}", bucket=i % 4)
        for i in range(first, first + count)
    ]
    return [encode_manifest([e]) for e in entries], entries


def blocks(data: bytes) -> list[RawBlock]:
    return list(raw_blocks(data, read_header(data)))


def test_small_manifests_are_joined_into_few_full_blocks() -> None:
    files, entries = small_manifests(0, 600)

    merged = concatenate_manifests(files)

    assert merged is not None
    assert decode_manifest(merged) == entries
    assert sum(b.count for b in blocks(merged)) == 600
    assert len(blocks(merged)) <= 4  # not one block per manifest


def test_merging_a_merged_manifest_again_copies_its_full_blocks_as_they_are() -> None:
    files, entries = small_manifests(0, 600)
    merged = concatenate_manifests(files)
    assert merged is not None
    full = [bytes(b.data) for b in blocks(merged) if b.count >= 64]
    assert full  # the test needs at least one full block to follow
    tail, more = small_manifests(600, 30)

    again = concatenate_manifests([merged, *tail])

    assert again is not None
    assert decode_manifest(again) == entries + more
    copied = [bytes(b.data) for b in blocks(again)]
    assert all(block in copied for block in full)  # byte for byte: never decompressed and compressed again
    assert list(fastavro.reader(io.BytesIO(again)))  # any Avro reader takes the joined file


def test_a_manifest_without_compression_is_joined_too() -> None:
    files, entries = small_manifests(0, 3)
    reader = fastavro.reader(io.BytesIO(files[0]))
    header = read_header(files[0])
    plain = io.BytesIO()
    fastavro.writer(plain, fastavro.parse_schema(reader.writer_schema), list(reader))
    assert read_header(plain.getvalue()).codec == b"null"
    assert read_header(plain.getvalue()).metadata["avro.schema"] == header.metadata["avro.schema"]

    merged = concatenate_manifests([plain.getvalue(), *files[1:]])

    assert merged is not None
    assert decode_manifest(merged) == entries


@pytest.mark.parametrize("cut", [3, 30, -20, -1])
def test_a_damaged_manifest_is_left_to_the_decoding_merge(cut: int) -> None:
    files, _ = small_manifests(0, 2)
    damaged = files[1][:cut]

    assert concatenate_manifests([files[0], damaged]) is None


def test_a_file_that_is_not_avro_is_refused_by_the_header_reader() -> None:
    with pytest.raises(ValueError, match="magic"):
        read_header(b"PAR1....")
