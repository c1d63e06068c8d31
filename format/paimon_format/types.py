"""Paimon atomic data types: a small value object plus a parser for Paimon's type strings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

# Java's VarCharType/VarBinaryType.MAX_LENGTH: VARCHAR of this length *is* STRING (and BYTES).
MAX_LENGTH = 2_147_483_647

MAX_DECIMAL_PRECISION = 38
# BinaryRow keeps decimals up to this precision as an unscaled long in the fixed slot.
MAX_COMPACT_DECIMAL_PRECISION = 18
MAX_TIMESTAMP_PRECISION = 9
# BinaryRow keeps timestamps up to this precision as epoch millis in the fixed slot.
MAX_COMPACT_TIMESTAMP_PRECISION = 3

_PLAIN_ROOTS = frozenset(
    {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING", "BYTES", "DATE"}
)
_LENGTH_ROOTS = frozenset({"CHAR", "VARCHAR", "BINARY", "VARBINARY"})
_PRECISION_ROOTS = frozenset({"TIME", "TIMESTAMP", "TIMESTAMP_LTZ"})
ROOTS = _PLAIN_ROOTS | _LENGTH_ROOTS | _PRECISION_ROOTS | {"DECIMAL"}

_DEFAULT_PRECISION = {"TIME": 0, "TIMESTAMP": 6, "TIMESTAMP_LTZ": 6}
_INT_RANGES = {
    "TINYINT": (-(2**7), 2**7 - 1),
    "SMALLINT": (-(2**15), 2**15 - 1),
    "INT": (-(2**31), 2**31 - 1),
    "BIGINT": (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True)
class DataType:
    """One Paimon atomic type; parameters missing for a parameterised root get Paimon's defaults."""

    root: str
    nullable: bool = True
    precision: int | None = None
    scale: int | None = None
    length: int | None = None
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        root = self.root
        if root not in ROOTS:
            raise ValueError(f"unknown Paimon type root {root!r}")
        if root == "DECIMAL":
            self._check_decimal()
        elif root in _PRECISION_ROOTS:
            self._only("precision")
            if self.precision is None:
                object.__setattr__(self, "precision", _DEFAULT_PRECISION[root])
            _check_range(self, "precision", self.precision, 0, MAX_TIMESTAMP_PRECISION)
        elif root in _LENGTH_ROOTS:
            self._only("length")
            if self.length is None:
                object.__setattr__(self, "length", 1)
            _check_range(self, "length", self.length, 1, MAX_LENGTH)
        else:
            self._only()
        # Types key the codec caches on the per-row hot path; hash once instead of per lookup.
        key = (self.root, self.nullable, self.precision, self.scale, self.length)
        object.__setattr__(self, "_hash", hash(key))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[DataType], tuple[str, bool, int | None, int | None, int | None]]:
        # Rebuild through __init__ when unpickled (e.g. on a Spark executor): str hashes are salted
        # per process, so a pickled _hash would be wrong there.
        return (DataType, (self.root, self.nullable, self.precision, self.scale, self.length))

    def _check_decimal(self) -> None:
        self._only("precision", "scale")
        if self.precision is None:
            object.__setattr__(self, "precision", 10)
        if self.scale is None:
            object.__setattr__(self, "scale", 0)
        precision = _check_range(self, "precision", self.precision, 1, MAX_DECIMAL_PRECISION)
        _check_range(self, "scale", self.scale, 0, precision)

    def _only(self, *allowed: str) -> None:
        for name in ("precision", "scale", "length"):
            if name not in allowed and getattr(self, name) is not None:
                raise ValueError(f"type {self.root} takes no {name}")

    @property
    def is_decimal(self) -> bool:
        """True for DECIMAL."""
        return self.root == "DECIMAL"

    @property
    def is_compact_decimal(self) -> bool:
        """True for a DECIMAL stored as an unscaled long (precision <= 18)."""
        return self.root == "DECIMAL" and self.decimal_precision <= MAX_COMPACT_DECIMAL_PRECISION

    @property
    def is_timestamp(self) -> bool:
        """True for TIMESTAMP and TIMESTAMP WITH LOCAL TIME ZONE."""
        return self.root in ("TIMESTAMP", "TIMESTAMP_LTZ")

    @property
    def is_compact_timestamp(self) -> bool:
        """True for a timestamp stored as epoch millis in the fixed slot (precision <= 3)."""
        return self.is_timestamp and self.time_precision <= MAX_COMPACT_TIMESTAMP_PRECISION

    @property
    def is_string(self) -> bool:
        """True for CHAR, VARCHAR and STRING."""
        return self.root in ("CHAR", "VARCHAR", "STRING")

    @property
    def is_binary(self) -> bool:
        """True for BINARY, VARBINARY and BYTES."""
        return self.root in ("BINARY", "VARBINARY", "BYTES")

    @property
    def is_integer(self) -> bool:
        """True for TINYINT, SMALLINT, INT and BIGINT."""
        return self.root in _INT_RANGES

    @property
    def int_range(self) -> tuple[int, int]:
        """Inclusive (min, max) of an integer type."""
        try:
            return _INT_RANGES[self.root]
        except KeyError:
            raise ValueError(f"{self} is not an integer type") from None

    @property
    def decimal_precision(self) -> int:
        """Precision of a DECIMAL (never None after construction)."""
        if self.root != "DECIMAL" or self.precision is None:
            raise ValueError(f"{self} is not a DECIMAL")
        return self.precision

    @property
    def decimal_scale(self) -> int:
        """Scale of a DECIMAL (never None after construction)."""
        if self.root != "DECIMAL" or self.scale is None:
            raise ValueError(f"{self} is not a DECIMAL")
        return self.scale

    @property
    def time_precision(self) -> int:
        """Fractional-second precision of TIME/TIMESTAMP/TIMESTAMP_LTZ."""
        if self.root not in _PRECISION_ROOTS or self.precision is None:
            raise ValueError(f"{self} has no time precision")
        return self.precision

    @property
    def max_length(self) -> int | None:
        """Declared length of CHAR/VARCHAR/BINARY/VARBINARY, None for unbounded or other types."""
        return self.length if self.root in _LENGTH_ROOTS else None

    def not_null(self) -> DataType:
        """Return a copy with nullable=False."""
        return replace(self, nullable=False)

    def with_nullable(self, nullable: bool) -> DataType:
        """Return a copy with the given nullability."""
        return replace(self, nullable=nullable)

    def __str__(self) -> str:
        root = self.root
        if root == "DECIMAL":
            text = f"DECIMAL({self.precision}, {self.scale})"
        elif root in _LENGTH_ROOTS:
            text = f"{root}({self.length})"
        elif root == "TIMESTAMP_LTZ":
            # Java's LocalZonedTimestampType.asSQLString spelling, which Java and pypaimon both parse.
            text = f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        elif root in _PRECISION_ROOTS:
            text = f"{root}({self.precision})"
        else:
            text = root
        return text if self.nullable else text + " NOT NULL"


def _check_range(t: DataType, name: str, value: int | None, low: int, high: int) -> int:
    if value is None or isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{t.root} {name} must be an integer in [{low}, {high}], got {value!r}")
    return value


_ALIASES = {"INTEGER": "INT", "NUMERIC": "DECIMAL", "DEC": "DECIMAL", "DOUBLE PRECISION": "DOUBLE"}
_UNSUPPORTED = ("ROW", "ARRAY", "MAP", "MULTISET", "VECTOR", "VARIANT", "BLOB", "INTERVAL", "RAW")
_TYPE_RE = re.compile(
    r"""
    (?P<name>[A-Z_]+(?:\s+PRECISION)?)
    (?:\s*\(\s*(?P<p1>\d+)\s*(?:,\s*(?P<p2>\d+)\s*)?\))?
    (?P<zone>\s+WITH\s+LOCAL\s+TIME\s+ZONE|\s+WITHOUT\s+TIME\s+ZONE)?
    (?P<null>\s+NOT\s+NULL|\s+NULL)?
    """,
    re.VERBOSE,
)


def parse_type(text: str) -> DataType:
    """Parse a Paimon atomic type string such as 'DECIMAL(10, 2) NOT NULL' (case-insensitive)."""
    if not isinstance(text, str):
        raise ValueError(f"type must be a string, got {type(text).__name__}")
    normalized = text.strip().upper()
    match = _TYPE_RE.fullmatch(normalized)
    if match is None:
        head = re.split(r"[\s(<]", normalized, maxsplit=1)[0]
        if head in _UNSUPPORTED:
            raise ValueError(f"unsupported (nested or non-atomic) Paimon type: {text!r}")
        raise ValueError(f"unknown Paimon type: {text!r}")
    name = re.sub(r"\s+", " ", match["name"])
    name = _ALIASES.get(name, name)
    if name in _UNSUPPORTED:
        raise ValueError(f"unsupported (nested or non-atomic) Paimon type: {text!r}")
    if name not in ROOTS:
        raise ValueError(f"unknown Paimon type: {text!r}")
    p1 = int(match["p1"]) if match["p1"] is not None else None
    p2 = int(match["p2"]) if match["p2"] is not None else None
    nullable = match["null"] is None or "NOT" not in match["null"]
    zone = match["zone"]
    try:
        return _build(name, p1, p2, zone, nullable)
    except ValueError as exc:
        raise ValueError(f"invalid Paimon type {text!r}: {exc}") from None


def _build(name: str, p1: int | None, p2: int | None, zone: str | None, nullable: bool) -> DataType:
    if zone is not None:
        # Only TIME/TIMESTAMP take a zone clause; WITH LOCAL TIME ZONE turns TIMESTAMP into TIMESTAMP_LTZ.
        local = "LOCAL" in zone
        if name == "TIMESTAMP" and local:
            name = "TIMESTAMP_LTZ"
        elif not (name in ("TIME", "TIMESTAMP") and not local):
            raise ValueError(f"{name} does not take a time zone clause")
    if p2 is not None and name != "DECIMAL":
        raise ValueError(f"{name} takes at most one parameter")
    if name == "DECIMAL":
        return DataType("DECIMAL", nullable, precision=p1, scale=p2)
    if name in _PRECISION_ROOTS:
        return DataType(name, nullable, precision=p1)
    if name in _LENGTH_ROOTS:
        # Java normalises VARCHAR/VARBINARY(MAX_LENGTH) to STRING/BYTES; do the same so str() is canonical.
        if p1 == MAX_LENGTH and name == "VARCHAR":
            return DataType("STRING", nullable)
        if p1 == MAX_LENGTH and name == "VARBINARY":
            return DataType("BYTES", nullable)
        return DataType(name, nullable, length=p1)
    if p1 is not None:
        raise ValueError(f"{name} takes no parameters")
    return DataType(name, nullable)
