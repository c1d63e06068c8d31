"""The two FileIO implementations on real filesystems: local os calls, and pyarrow's local filesystem
standing in for an object store through the very same ArrowFileIO code."""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs
import pytest

from coordinator.storage.fileio import ArrowFileIO, FileIO, LocalFileIO


@pytest.fixture(params=["local", "arrow"])
def fileio(request: pytest.FixtureRequest) -> FileIO:
    return LocalFileIO() if request.param == "local" else ArrowFileIO(pafs.LocalFileSystem())


def test_write_new_never_replaces(fileio: FileIO, tmp_path: Path) -> None:
    path = str(tmp_path / "snapshot" / "snapshot-1")
    fileio.write_new(path, b"first")
    with pytest.raises(FileExistsError):
        fileio.write_new(path, b"second")
    assert fileio.read(path) == b"first"
    assert fileio.list_names(str(tmp_path / "snapshot")) == ["snapshot-1"]  # no temp file left behind


def test_write_unique_creates_its_folder(fileio: FileIO, tmp_path: Path) -> None:
    path = str(tmp_path / "manifest" / "manifest-abc-0")
    fileio.write_unique(path, b"entries")
    assert fileio.read(path) == b"entries"


def test_local_write_unique_refuses_a_name_clash(tmp_path: Path) -> None:
    path = tmp_path / "manifest-abc-0"
    path.write_bytes(b"someone else's")
    with pytest.raises(FileExistsError):
        LocalFileIO().write_unique(str(path), b"ours")
    assert path.read_bytes() == b"someone else's"


def test_overwrite_and_delete(fileio: FileIO, tmp_path: Path) -> None:
    path = str(tmp_path / "snapshot" / "LATEST")
    fileio.overwrite(path, b"1")
    fileio.overwrite(path, b"2")
    assert fileio.read(path) == b"2"
    fileio.delete(path)
    fileio.delete(path)  # a missing file is not an error
    assert not fileio.exists(path)
