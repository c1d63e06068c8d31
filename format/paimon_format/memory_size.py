"""Paimon's MemorySize text, as options such as `target-file-size` or `manifest.target-file-size` hold it.

The grammar of Java's MemorySize.parseBytes: ASCII digits, optional whitespace, an optional unit matched
case-insensitively, surrounding whitespace ignored; the result must fit a Java long.
"""

from __future__ import annotations

from typing import Final

MIB: Final = 1 << 20

_UNITS: Final[dict[str, int]] = {
    **dict.fromkeys(("", "b", "bytes"), 1),
    **dict.fromkeys(("k", "kb", "kibibytes"), 1 << 10),
    **dict.fromkeys(("m", "mb", "mebibytes"), 1 << 20),
    **dict.fromkeys(("g", "gb", "gibibytes"), 1 << 30),
    **dict.fromkeys(("t", "tb", "tebibytes"), 1 << 40),
}
_LONG_MAX: Final = 2**63 - 1


def parse_memory_size(text: str) -> int:
    """Bytes of a MemorySize text: `1024`, `8 mb`, `16MB`, `2 KiBiBytes`, `1t`.

    Raises:
        ValueError: no leading number, an unknown unit, or more bytes than a Java long holds.
    """
    trimmed = text.strip()
    digits = len(trimmed) - len(trimmed.lstrip("0123456789"))
    number, unit = trimmed[:digits], trimmed[digits:].strip().lower()
    if not number:
        raise ValueError(f"not a memory size: {text!r} does not start with a number")
    if unit not in _UNITS:
        raise ValueError(f"not a memory size: {text!r}; units are {', '.join(sorted(_UNITS)[1:])}")
    size = int(number) * _UNITS[unit]
    if size > _LONG_MAX:
        raise ValueError(f"not a memory size: {text!r} is more bytes than a 64-bit number holds")
    return size
