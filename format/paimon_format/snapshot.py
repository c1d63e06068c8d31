"""Paimon snapshot JSON (version 3), the LATEST/EARLIEST hint files and snapshot file names."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final, TypedDict

from paimon_format.json_object import load_object

LATEST: Final = "LATEST"
EARLIEST: Final = "EARLIEST"
CURRENT_VERSION: Final = 3
BATCH_IDENTIFIER: Final = 2**63 - 1
"""commitIdentifier of every batch commit: Long.MAX_VALUE (Paimon's BatchWriteBuilder.COMMIT_IDENTIFIER)."""

_SNAPSHOT_PREFIX: Final = "snapshot-"
_SNAPSHOT_NAME = re.compile(r"snapshot-([0-9]+)")
_HINT = re.compile(r"[0-9]+")


class CommitKind(str, Enum):
    """What a snapshot's commit did."""

    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    """One snapshot file; ``extra`` keeps JSON keys this version does not know (e.g. Java's ``operation``)."""

    version: int = CURRENT_VERSION
    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    total_record_count: int
    delta_record_count: int
    commit_user: str
    commit_identifier: int
    commit_kind: CommitKind
    time_millis: int
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    next_row_id: int | None = None
    properties: Mapping[str, str] | None = None
    uuid: str | None = None
    writer_version: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        clash = _KNOWN_KEYS.intersection(self.extra)
        if clash:
            raise ValueError(f"extra snapshot keys shadow known keys: {sorted(clash)}")

    def to_json(self) -> str:
        """Render Paimon's snapshot JSON: camelCase keys in pypaimon's order, null optionals omitted."""
        out: dict[str, object] = {}
        for attr, key in _KEYS:
            value = getattr(self, attr)
            if value is None:
                continue
            if isinstance(value, CommitKind):
                value = value.value
            elif isinstance(value, Mapping):
                value = dict(value)
            out[key] = value
        out.update(self.extra)
        return _pretty(out)

    @classmethod
    def from_json(cls, text: str | bytes) -> Snapshot:
        """Parse snapshot JSON written by us, pypaimon or Java Paimon; unknown keys land in ``extra``."""
        data = load_object(text, "snapshot", _REQUIRED_KEYS)
        try:
            kind = CommitKind(data["commitKind"])
        except ValueError as exc:
            raise ValueError(f"unknown snapshot commitKind {data['commitKind']!r}") from exc
        known = {attr: _checked(data, key, attr) for attr, key in _KEYS if attr != "commit_kind"}
        return cls(
            **known,
            commit_kind=kind,
            extra={k: v for k, v in data.items() if k not in _KNOWN_KEYS},
        )


def _pretty(document: dict[str, object]) -> str:
    """`json.dumps(document, indent=2, ensure_ascii=False)`, byte for byte, at C speed for the usual flat
    snapshot: with an indent, json.dumps takes its pure-Python encoder, a tenth of a commit's CPU when a
    coordinator commits to many tables at once. Nested values (extra keys a newer writer added) are
    rendered the slow way."""
    if any(isinstance(value, (dict, list)) for value in document.values()):
        return json.dumps(document, indent=2, ensure_ascii=False)
    if not document:
        return "{}"
    fields = ",\n  ".join(f"{_scalar(key)}: {_scalar(value)}" for key, value in document.items())
    return "{\n  " + fields + "\n}"


_scalar: Final = json.JSONEncoder(ensure_ascii=False).encode


# (attribute, JSON key) in the order pypaimon writes them (§3 of paimon-format.md).
_KEYS: Final = (
    ("version", "version"),
    ("id", "id"),
    ("schema_id", "schemaId"),
    ("base_manifest_list", "baseManifestList"),
    ("delta_manifest_list", "deltaManifestList"),
    ("total_record_count", "totalRecordCount"),
    ("delta_record_count", "deltaRecordCount"),
    ("commit_user", "commitUser"),
    ("commit_identifier", "commitIdentifier"),
    ("commit_kind", "commitKind"),
    ("time_millis", "timeMillis"),
    ("base_manifest_list_size", "baseManifestListSize"),
    ("delta_manifest_list_size", "deltaManifestListSize"),
    ("changelog_manifest_list", "changelogManifestList"),
    ("changelog_manifest_list_size", "changelogManifestListSize"),
    ("index_manifest", "indexManifest"),
    ("changelog_record_count", "changelogRecordCount"),
    ("watermark", "watermark"),
    ("statistics", "statistics"),
    ("next_row_id", "nextRowId"),
    ("properties", "properties"),
    ("uuid", "uuid"),
    ("writer_version", "writerVersion"),
)
_KNOWN_KEYS: Final = frozenset(key for _, key in _KEYS)
_REQUIRED_KEYS: Final = tuple(key for _, key in _KEYS[:11])
_STR_ATTRS: Final = frozenset(
    {
        "base_manifest_list",
        "delta_manifest_list",
        "commit_user",
        "changelog_manifest_list",
        "index_manifest",
        "statistics",
        "uuid",
        "writer_version",
    }
)


def _checked(data: Mapping[str, Any], key: str, attr: str) -> Any:
    # Reject wrongly typed values here so a bad file fails at parse time, not deep in the service.
    value = data.get(key)
    if value is None:
        return None
    if attr == "properties":
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise ValueError("snapshot key 'properties' must map strings to strings")
        return dict(value)
    expected: type = str if attr in _STR_ATTRS else int
    if not isinstance(value, expected) or isinstance(value, bool):
        raise ValueError(f"snapshot key {key!r} must be {expected.__name__}, got {value!r}")
    return value


class CarriedForward(TypedDict):
    """Snapshot fields a new snapshot inherits from its predecessor, keyed by ``Snapshot`` attribute."""

    index_manifest: str | None
    statistics: str | None
    next_row_id: int | None
    watermark: int | None


def carry_forward(
    previous: Snapshot | None, *, schema_id: int, watermark: int | None = None
) -> CarriedForward:
    """Fields to copy into the next snapshot: ``Snapshot(**carry_forward(prev, schema_id=s), ...)``.

    The index manifest and next row id carry over unchanged (override them when the commit changes
    them); the watermark is the larger of the old and the committed one. Statistics are inherited only
    while the schema id stays the same, because Java drops stats computed for another schema.
    """
    if previous is None:
        return CarriedForward(index_manifest=None, statistics=None, next_row_id=None, watermark=watermark)
    marks = [w for w in (previous.watermark, watermark) if w is not None]
    return CarriedForward(
        index_manifest=previous.index_manifest,
        statistics=previous.statistics if previous.schema_id == schema_id else None,
        next_row_id=previous.next_row_id,
        watermark=max(marks, default=None),
    )


def format_hint(snapshot_id: int) -> bytes:
    """Content of a LATEST/EARLIEST hint file: the decimal id, no newline (as Paimon writes it)."""
    if snapshot_id < 0:
        raise ValueError(f"snapshot id must not be negative: {snapshot_id}")
    return str(snapshot_id).encode("ascii")


def parse_hint(data: bytes) -> int | None:
    """Snapshot id in a hint file, or None when it is empty or garbled (callers then list the dir)."""
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    return int(text) if _HINT.fullmatch(text) else None


def snapshot_file_name(snapshot_id: int) -> str:
    """File name of a snapshot inside ``snapshot/``."""
    return f"{_SNAPSHOT_PREFIX}{snapshot_id}"


def parse_snapshot_file_name(name: str) -> int | None:
    """Snapshot id of a ``snapshot-<id>`` file name, None for anything else (hints, temp files)."""
    match = _SNAPSHOT_NAME.fullmatch(name)
    return int(match.group(1)) if match else None
