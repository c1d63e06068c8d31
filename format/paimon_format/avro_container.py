"""Avro object container files at the level of their blocks, without decoding a record.

A container is the magic `Obj\\x01`, a metadata map (the schema, the codec), a 16-byte sync marker, then
blocks: a record count, a byte size, that many (compressed) bytes, and the sync marker again. Copying a
block from one file into another only needs the block's bytes and the new file's marker, which is how a
manifest merge joins manifests without decompressing what it copies (format.manifest).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

MAGIC = b"Obj\x01"
SYNC_SIZE = 16


@dataclass(frozen=True)
class Container:
    """What a container file's header says, and where its first block starts."""

    metadata: dict[str, bytes]
    sync: bytes
    blocks_at: int

    @property
    def codec(self) -> bytes:
        return self.metadata.get("avro.codec", b"null")


@dataclass(frozen=True)
class RawBlock:
    """One block as stored: its record count and its bytes, still compressed with the file's codec."""

    count: int
    data: memoryview


def read_header(data: bytes) -> Container:
    """The header of a container file.

    Raises:
        ValueError: not an Avro container file, or one cut short.
    """
    if not data.startswith(MAGIC):
        raise ValueError("not an Avro container file: no Obj\\x01 magic")
    metadata: dict[str, bytes] = {}
    pos = len(MAGIC)
    while True:
        count, pos = _long(data, pos)
        if count == 0:
            break
        if count < 0:  # a block of the map written with its byte size, which we do not need
            count = -count
            _, pos = _long(data, pos)
        for _ in range(count):
            key, pos = _bytes(data, pos)
            value, pos = _bytes(data, pos)
            metadata[key.decode()] = value
    sync = data[pos : pos + SYNC_SIZE]
    if len(sync) != SYNC_SIZE:
        raise ValueError("Avro container header cut short before its sync marker")
    return Container(metadata, sync, pos + SYNC_SIZE)


def raw_blocks(data: bytes, container: Container) -> Iterator[RawBlock]:
    """The file's blocks in order, each checked to end with the header's sync marker.

    Raises:
        ValueError: a block cut short or not followed by the sync marker.
    """
    view = memoryview(data)
    pos = container.blocks_at
    while pos < len(data):
        count, pos = _long(data, pos)
        size, pos = _long(data, pos)
        end = pos + size
        if size < 0 or end + SYNC_SIZE > len(data) or data[end : end + SYNC_SIZE] != container.sync:
            raise ValueError("Avro block cut short or not followed by the file's sync marker")
        yield RawBlock(count, view[pos:end])
        pos = end + SYNC_SIZE


def _long(data: bytes, pos: int) -> tuple[int, int]:
    """The zig-zag varint long at `pos`, and the position after it."""
    shift = z = 0
    while True:
        if pos >= len(data):
            raise ValueError("Avro long cut short")
        byte = data[pos]
        pos += 1
        z |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (z >> 1) ^ -(z & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("Avro long longer than 10 bytes")


def _bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    size, pos = _long(data, pos)
    end = pos + size
    if size < 0 or end > len(data):
        raise ValueError("Avro bytes cut short")
    return data[pos:end], end
