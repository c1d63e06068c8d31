"""Paimon type strings: parsing, canonical spelling, and that pypaimon understands what we write."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys

import pyarrow as pa
import pytest
from pypaimon.schema.data_types import DataTypeParser, PyarrowFieldParser

from paimon_format.types import DataType, parse_type


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("INT", "INT"),
        ("integer", "INT"),
        ("Integer NOT NULL", "INT NOT NULL"),
        ("BIGINT NULL", "BIGINT"),
        ("STRING NOT NULL", "STRING NOT NULL"),
        ("VARCHAR(2147483647)", "STRING"),
        ("VARBINARY(2147483647) NOT NULL", "BYTES NOT NULL"),
        ("varchar(20)", "VARCHAR(20)"),
        ("CHAR", "CHAR(1)"),
        ("BINARY(16)", "BINARY(16)"),
        ("DECIMAL", "DECIMAL(10, 0)"),
        ("DECIMAL(12)", "DECIMAL(12, 0)"),
        ("decimal(38,10)", "DECIMAL(38, 10)"),
        ("NUMERIC(5, 2) NOT NULL", "DECIMAL(5, 2) NOT NULL"),
        ("DEC(3, 1)", "DECIMAL(3, 1)"),
        ("TIMESTAMP", "TIMESTAMP(6)"),
        ("TIMESTAMP(3)", "TIMESTAMP(3)"),
        ("TIMESTAMP(9) WITHOUT TIME ZONE", "TIMESTAMP(9)"),
        ("TIMESTAMP WITH LOCAL TIME ZONE", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
        ("TIMESTAMP_LTZ(3)", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
        ("timestamp_ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
        ("TIMESTAMP(0) WITH LOCAL TIME ZONE NOT NULL", "TIMESTAMP(0) WITH LOCAL TIME ZONE NOT NULL"),
        ("TIME", "TIME(0)"),
        ("TIME(3)", "TIME(3)"),
        ("DATE NOT NULL", "DATE NOT NULL"),
        ("DOUBLE PRECISION", "DOUBLE"),
        ("  boolean  ", "BOOLEAN"),
        ("TINYINT", "TINYINT"),
        ("SMALLINT", "SMALLINT"),
        ("FLOAT", "FLOAT"),
        ("BYTES", "BYTES"),
    ],
)
def test_parse_and_canonical_string(text: str, canonical: str) -> None:
    t = parse_type(text)
    assert str(t) == canonical
    assert parse_type(canonical) == t


def test_parsed_fields() -> None:
    t = parse_type("DECIMAL(38, 10) NOT NULL")
    assert (t.root, t.precision, t.scale, t.nullable) == ("DECIMAL", 38, 10, False)
    assert not t.is_compact_decimal
    assert parse_type("DECIMAL(18, 2)").is_compact_decimal
    assert parse_type("TIMESTAMP(3)").is_compact_timestamp
    assert not parse_type("TIMESTAMP(4)").is_compact_timestamp
    assert parse_type("TIMESTAMP_LTZ").root == "TIMESTAMP_LTZ"
    assert parse_type("VARCHAR(20)").length == 20
    assert parse_type("STRING").not_null() == DataType("STRING", nullable=False)
    assert parse_type("INT NOT NULL").with_nullable(True) == DataType("INT")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ROW<a INT>", "unsupported"),
        ("ARRAY<INT>", "unsupported"),
        ("MAP<STRING, INT>", "unsupported"),
        ("MULTISET<INT>", "unsupported"),
        ("VARIANT", "unsupported"),
        ("BLOB", "unsupported"),
        ("FOO", "unknown Paimon type: 'FOO'"),
        ("INT(3)", "INT takes no parameters"),
        ("DECIMAL(39, 0)", "precision must be an integer in \\[1, 38\\]"),
        ("DECIMAL(0)", "precision"),
        ("DECIMAL(5, 6)", "scale must be an integer in \\[0, 5\\]"),
        ("TIMESTAMP(10)", "precision must be an integer in \\[0, 9\\]"),
        ("TIME(10)", "precision"),
        ("VARCHAR(0)", "length"),
        ("TIMESTAMP WITH TIME ZONE", "unknown Paimon type"),
        ("DATE WITH LOCAL TIME ZONE", "does not take a time zone"),
        ("VARCHAR(3, 4)", "at most one parameter"),
        ("", "unknown Paimon type"),
        ("INT NOT NULL NOT NULL", "unknown Paimon type"),
    ],
)
def test_bad_types(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_type(text)


def test_invalid_direct_construction() -> None:
    with pytest.raises(ValueError, match="unknown Paimon type root"):
        DataType("INTEGER")
    with pytest.raises(ValueError, match="takes no length"):
        DataType("INT", length=3)
    with pytest.raises(ValueError, match="scale"):
        DataType("DECIMAL", precision=2, scale=3)
    assert DataType("DECIMAL") == DataType("DECIMAL", precision=10, scale=0)


@pytest.mark.parametrize(
    ("text", "arrow"),
    [
        ("DECIMAL(10, 2)", pa.decimal128(10, 2)),
        ("TIMESTAMP(6)", pa.timestamp("us")),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE", pa.timestamp("ms", tz="UTC")),
        ("TIMESTAMP(9) WITH LOCAL TIME ZONE", pa.timestamp("ns", tz="UTC")),
        ("VARCHAR(20)", pa.string()),
        ("STRING NOT NULL", pa.string()),
        ("DATE", pa.date32()),
        ("TIME(0)", pa.time32("ms")),
        ("BYTES", pa.binary()),
    ],
)
def test_pypaimon_understands_our_strings(text: str, arrow: pa.DataType) -> None:
    parsed = DataTypeParser.parse_data_type(str(parse_type(text)))
    assert PyarrowFieldParser.from_paimon_type(parsed) == arrow
    assert parsed.nullable == ("NOT NULL" not in text)


def test_pickled_types_hash_like_fresh_ones_in_another_process() -> None:
    # String hashes are salted per process, so a cached hash must not travel inside a pickle.
    code = (
        "import pickle, sys; from paimon_format.types import parse_type;"
        "sys.stdout.buffer.write(pickle.dumps(parse_type('DECIMAL(10, 2) NOT NULL')))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": os.pathsep.join(sys.path)}
    blob = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, env=env).stdout
    loaded = pickle.loads(blob)
    fresh = parse_type("DECIMAL(10, 2) NOT NULL")
    assert loaded == fresh
    assert hash(loaded) == hash(fresh)
    assert {fresh: 1}[loaded] == 1
    assert copy.deepcopy(fresh) == fresh
