"""Paimon table schema JSON (``schema/schema-<id>``), as written by Java Paimon and pypaimon."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from paimon_format.json_object import load_object
from paimon_format.partition_path import DEFAULT_PARTITION_NAME

CURRENT_VERSION: Final = 3
# Paimon 0.7 wrote no "version"; readers then default bucket to 1 and file.format to orc.
PAIMON_07_VERSION: Final = 1
PAIMON_08_VERSION: Final = 2

_SCHEMA_PREFIX: Final = "schema-"
_SCHEMA_NAME = re.compile(r"schema-([0-9]+)")
_REQUIRED_KEYS: Final = ("fields", "options", "id", "highestFieldId", "partitionKeys", "primaryKeys")

# Atomic types are strings ("BIGINT NOT NULL"); ROW/ARRAY/MAP/MULTISET are JSON objects, kept verbatim.
TypeJson = str | Mapping[str, object]


@dataclass(frozen=True)
class SchemaField:
    """One top-level column: stable field id, name and Paimon type."""

    id: int
    name: str
    type: TypeJson
    description: str | None = None
    default_value: str | None = None

    def to_dict(self) -> dict[str, object]:
        """JSON object of this field, optional keys only when set (as Paimon writes them)."""
        out: dict[str, object] = {"id": self.id, "name": self.name, "type": self.type}
        if self.description is not None:
            out["description"] = self.description
        if self.default_value is not None:
            out["defaultValue"] = self.default_value
        return out


@dataclass(frozen=True, kw_only=True)
class TableSchema:
    """One schema version of a table; ``extra`` keeps JSON keys this version does not know."""

    version: int = CURRENT_VERSION
    id: int
    fields: tuple[SchemaField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = dataclasses.field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0
    extra: Mapping[str, object] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        clash = _KNOWN_KEYS.intersection(self.extra)
        if clash:
            raise ValueError(f"extra schema keys shadow known keys: {sorted(clash)}")

    def to_json(self) -> str:
        """Render Paimon's schema JSON with its key order (version … timeMillis)."""
        out: dict[str, object] = {
            "version": self.version,
            "id": self.id,
            "fields": [f.to_dict() for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
            "comment": self.comment,
            "timeMillis": self.time_millis,
        }
        out.update(self.extra)
        return json.dumps(out, indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> TableSchema:
        """Parse schema JSON from us, pypaimon or Java; no version means Paimon 0.7 (options left as is)."""
        data = load_object(text, "schema", _REQUIRED_KEYS)
        return cls(
            version=_int(data.get("version", PAIMON_07_VERSION), "version"),
            id=_int(data["id"], "id"),
            fields=tuple(_field_from(f) for f in _list(data["fields"], "fields")),
            highest_field_id=_int(data["highestFieldId"], "highestFieldId"),
            partition_keys=_strings(data["partitionKeys"], "partitionKeys"),
            primary_keys=_strings(data["primaryKeys"], "primaryKeys"),
            options=_options(data["options"]),
            comment=_opt_str(data.get("comment"), "comment"),
            # Very old schemas have no timeMillis; Java reads that as 0 too.
            time_millis=_int(data.get("timeMillis") or 0, "timeMillis"),
            extra={k: v for k, v in data.items() if k not in _KNOWN_KEYS},
        )

    def field(self, name: str) -> SchemaField:
        """The column called ``name`` (KeyError if absent)."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"schema {self.id} has no field {name!r}")

    @property
    def bucket(self) -> int:
        """The ``bucket`` option with Paimon's version-dependent default (-1, or 1 for 0.7 schemas)."""
        default = "1" if self.version <= PAIMON_07_VERSION else "-1"
        return int(self.options.get("bucket", default))

    @property
    def file_format(self) -> str:
        """The ``file.format`` option with Paimon's default (orc before schema version 3, else parquet)."""
        default = "orc" if self.version <= PAIMON_08_VERSION else "parquet"
        return self.options.get("file.format", default).lower()

    @property
    def max_level(self) -> int:
        """The top LSM level: ``num-levels`` - 1, where num-levels defaults to the compaction trigger + 1."""
        trigger = int(self.options.get("num-sorted-run.compaction-trigger", "5"))
        return max(1, int(self.options.get("num-levels", str(trigger + 1))) - 1)

    @property
    def default_partition_name(self) -> str:
        """Directory name of a null partition value (option ``partition.default-name``)."""
        return self.options.get("partition.default-name", DEFAULT_PARTITION_NAME)

    @property
    def trimmed_primary_keys(self) -> tuple[str, ...]:
        """Primary key minus partition keys: the key stored in data files and manifest key ranges."""
        return tuple(k for k in self.primary_keys if k not in self.partition_keys)

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        """Columns hashed to pick a bucket: option ``bucket-key``, else the trimmed primary key."""
        configured = self.options.get("bucket-key", "")
        keys = tuple(k.strip() for k in configured.split(",") if k.strip())
        return keys or self.trimmed_primary_keys


_KNOWN_KEYS: Final = frozenset(
    {
        "version",
        "id",
        "fields",
        "highestFieldId",
        "partitionKeys",
        "primaryKeys",
        "options",
        "comment",
        "timeMillis",
    }
)


def schema_file_name(schema_id: int) -> str:
    """File name of a schema inside ``schema/``."""
    return f"{_SCHEMA_PREFIX}{schema_id}"


def parse_schema_file_name(name: str) -> int | None:
    """Schema id of a ``schema-<id>`` file name, None for anything else."""
    match = _SCHEMA_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


# Validation helpers: the JSON comes from foreign writers, so fail with a clear message at parse time.


def _int(value: Any, key: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"schema key {key!r} must be an integer, got {value!r}")
    return value


def _opt_str(value: Any, key: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"schema key {key!r} must be a string, got {value!r}")
    return value


def _list(value: Any, key: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"schema key {key!r} must be a list, got {value!r}")
    return value


def _strings(value: Any, key: str) -> tuple[str, ...]:
    items = _list(value, key)
    if not all(isinstance(item, str) for item in items):
        raise ValueError(f"schema key {key!r} must list strings, got {value!r}")
    return tuple(items)


def _options(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError("schema key 'options' must map strings to strings")
    return dict(value)


def _field_from(data: Any) -> SchemaField:
    if not isinstance(data, dict):
        raise ValueError(f"schema field must be an object, got {data!r}")
    for key in ("id", "name", "type"):
        if data.get(key) is None:
            raise ValueError(f"schema field lacks required key {key!r}: {data!r}")
    type_json = data["type"]
    if not isinstance(type_json, (str, dict)):
        raise ValueError(f"schema field type must be a string or object, got {type_json!r}")
    name = data["name"]
    if not isinstance(name, str):
        raise ValueError(f"schema field name must be a string, got {name!r}")
    return SchemaField(
        id=_int(data["id"], "fields[].id"),
        name=name,
        type=type_json,
        description=_opt_str(data.get("description"), "fields[].description"),
        default_value=_opt_str(data.get("defaultValue"), "fields[].defaultValue"),
    )
