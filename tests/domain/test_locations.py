"""location_key and overlaps: every spelling of one folder is one key; folders overlap segment-wise."""

from __future__ import annotations

import pytest

from coordinator.domain.locations import ancestor_keys, contains, is_root, location_key, overlaps


@pytest.mark.parametrize(
    "location",
    [
        "/wh/db.db/t",
        "/wh/db.db/t/",
        "/wh//db.db///t//",
        "/wh/./db.db/x/../t",
        "file:///wh/db.db/t",
        "file:///wh/db.db/t/",
        "file:/wh/db.db/t",
        "FILE:///wh/db.db/t",
        "file://localhost/wh/db.db/t",
        "file:///wh/db.db/t?ignored=1",
    ],
)
def test_local_spellings_are_one_key(location: str) -> None:
    assert location_key(location) == "/wh/db.db/t"


@pytest.mark.parametrize(
    "location",
    [
        "s3://bucket/wh/db.db/t",
        "s3://bucket/wh/db.db/t/",
        "S3://bucket/wh//db.db/t",
        "s3a://bucket/wh/db.db/t",
        "s3n://bucket/wh/db.db/t",
        "s3://Bucket/wh/db.db/t",
        "s3://bucket/wh/db.db/t?endpoint_override=127.0.0.1:8333&scheme=http&region=us-east-1",
        "s3://AKIA:secret@bucket/wh/db.db/t",
        "bucket/wh/db.db/t",  # a row recorded before locations kept their scheme
        "//bucket/wh/db.db/t",  # a key is its own key
    ],
)
def test_object_store_spellings_are_one_key(location: str) -> None:
    assert location_key(location) == "//bucket/wh/db.db/t"


def test_a_key_keeps_no_credentials_or_options() -> None:
    key = location_key("s3://AKIA:secret@bucket/wh?access_key=AKIA&secret_key=secret")
    assert "secret" not in key
    assert "AKIA" not in key


def test_paths_keep_their_case_and_escapes_of_a_uri_are_decoded() -> None:
    assert location_key("/wh/T") != location_key("/wh/t")
    assert location_key("s3://b/wh/T") != location_key("s3://b/wh/t")
    assert location_key("s3://b/my%20t") == "//b/my t"
    assert location_key("file:///wh/my%20t") == "/wh/my t"
    assert location_key("/wh/my%20t") == "/wh/my%20t"  # a plain path is taken as it is


def test_local_and_object_store_folders_differ() -> None:
    assert location_key("/bucket/wh") != location_key("bucket/wh")
    assert not overlaps("/bucket/wh", "s3://bucket/wh")


def test_other_hosts_keep_their_authority() -> None:
    assert location_key("hdfs://NameNode:8020/wh/t/") == "//namenode:8020/wh/t"
    assert location_key("file://other-host/wh/t") == "//other-host/wh/t"
    assert location_key("hdfs://nn:8020/wh") != location_key("hdfs://nn:9000/wh")


@pytest.mark.parametrize("location", ["", "   ", "s3:///wh/t", "s3:wh/t", "s3://"])
def test_a_location_without_folder_is_refused(location: str) -> None:
    with pytest.raises(ValueError, match=r"empty|names no bucket"):
        location_key(location)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("/wh/t", "/wh/t", True),
        ("/wh/t", "/wh/t/", True),
        ("/wh/t", "file:///wh/t", True),
        ("/wh/t", "/wh/t/sub", True),
        ("/wh/t/sub", "/wh/t", True),
        ("/wh", "/wh/db.db/t", True),
        ("/wh/t", "/wh/t2", False),
        ("/wh/t2", "/wh/t", False),
        ("/wh/t", "/wh/u", False),
        ("/wh/t", "/wh/tt/x", False),
        ("s3://b/wh/t", "b/wh/t/x", True),
        ("s3://b/wh/t", "s3://b/wh/t2", False),
        ("s3://b/wh/t", "s3://c/wh/t", False),
        ("s3://b/wh", "/b/wh", False),
    ],
)
def test_overlaps_segment_wise(a: str, b: str, expected: bool) -> None:
    assert overlaps(a, b) is expected
    assert overlaps(b, a) is expected


def test_contains_has_a_direction() -> None:
    assert contains("/wh", "/wh/db.db/t")
    assert not contains("/wh/db.db/t", "/wh")
    assert contains("/wh/t", "/wh/t/")


def test_ancestors_are_the_enclosing_folders_outermost_first() -> None:
    assert ancestor_keys("/wh/db.db/t") == ["/", "/wh", "/wh/db.db"]
    assert ancestor_keys("//bucket/wh/t") == ["//bucket", "//bucket/wh"]
    assert ancestor_keys("/wh") == ["/"]
    assert all(contains(a, "/wh/db.db/t") for a in ancestor_keys("/wh/db.db/t"))


def test_roots() -> None:
    assert is_root(location_key("/"))
    assert is_root(location_key("file:///"))
    assert is_root(location_key("s3://bucket/"))
    assert not is_root(location_key("s3://bucket/t"))
    assert not is_root(location_key("/t"))
