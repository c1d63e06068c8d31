"""One spelling of a local location, whoever reads it: the warehouse, a registration, a Spark job."""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs
import pytest

from coordinator.storage.fileio import LocalFileIO
from coordinator.storage.warehouse import open_warehouse
from coordinator_client.spark.layout import filesystem
from paimon_format.location import local_path


@pytest.mark.parametrize(
    "location",
    [
        "/data/wh",
        "/data/wh/",
        "/data/./x/../wh",
        "file:///data/wh",
        "file:///data/wh/",
        "file:/data/wh",
        "file://localhost/data/wh",
    ],
)
def test_local_spellings_name_one_folder(location: str) -> None:
    assert local_path(location) == "/data/wh"


def test_relative_paths_resolve_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert local_path("wh/db.db/t/") == str(tmp_path / "wh" / "db.db" / "t")


def test_percent_escapes_of_a_file_uri_are_decoded() -> None:
    assert local_path("file:///data/my%20wh") == "/data/my wh"
    assert local_path("/data/my%20wh") == "/data/my%20wh"  # a plain path is taken as it is


@pytest.mark.parametrize(
    "location", ["s3://bucket/wh", "hdfs://namenode:8020/wh", "gs://b/wh", "file://otherhost/wh"]
)
def test_other_filesystems_are_not_local(location: str) -> None:
    assert local_path(location) is None


@pytest.mark.parametrize("location", ["file:///data/wh/", "file:/data/wh", "/data/x/../wh"])
def test_the_service_and_the_spark_jobs_agree(location: str) -> None:
    fileio, root = open_warehouse(location)
    fs, spark_root = filesystem(location)
    assert isinstance(fileio, LocalFileIO)
    assert isinstance(fs, pafs.LocalFileSystem)
    assert root == spark_root == "/data/wh"
