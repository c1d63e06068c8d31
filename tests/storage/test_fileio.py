"""The FileIO implementations on real storage: local os calls, pyarrow's local filesystem (the code
that serves HDFS and other pyarrow filesystems), and obstore on the SeaweedFS S3 store."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import obstore
import pyarrow.fs as pafs
import pytest
from obstore.store import S3Store

from coordinator.storage.fileio import ArrowFileIO, FileIO, LocalFileIO
from coordinator.storage.object_store import ObjectStoreFileIO
from coordinator.storage.store_uri import StoreUri, redacted
from coordinator.storage.warehouse import open_warehouse
from tests.support.seaweed import BUCKET, SeaweedFS


@pytest.fixture(params=["local", "arrow", "s3"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[FileIO, str]:
    """A FileIO and a fresh folder location on it."""
    if request.param == "s3":
        request.getfixturevalue("seaweedfs")
        base = f"s3://{BUCKET}/fileio-{uuid.uuid4().hex[:12]}"
        return ObjectStoreFileIO(StoreUri.parse(base)), base
    fileio: FileIO = LocalFileIO() if request.param == "local" else ArrowFileIO(pafs.LocalFileSystem())
    return fileio, str(tmp_path)


def test_write_new_never_replaces(where: tuple[FileIO, str]) -> None:
    fileio, base = where
    path = f"{base}/snapshot/snapshot-1"
    fileio.write_new(path, b"first")
    with pytest.raises(FileExistsError):
        fileio.write_new(path, b"second")
    assert fileio.read(path) == b"first"
    assert fileio.list_names(f"{base}/snapshot") == ["snapshot-1"]  # no temp file left behind


def test_write_unique_creates_its_folder(where: tuple[FileIO, str]) -> None:
    fileio, base = where
    path = f"{base}/manifest/manifest-abc-0"
    fileio.write_unique(path, b"entries")
    assert fileio.read(path) == b"entries"
    assert fileio.size(path) == len(b"entries")
    assert fileio.size(f"{base}/manifest/missing") is None


def test_local_write_unique_refuses_a_name_clash(tmp_path: Path) -> None:
    path = tmp_path / "manifest-abc-0"
    path.write_bytes(b"someone else's")
    with pytest.raises(FileExistsError):
        LocalFileIO().write_unique(str(path), b"ours")
    assert path.read_bytes() == b"someone else's"


def test_overwrite_and_delete(where: tuple[FileIO, str]) -> None:
    fileio, base = where
    path = f"{base}/snapshot/LATEST"
    fileio.overwrite(path, b"1")
    fileio.overwrite(path, b"2")
    assert fileio.read(path) == b"2"
    fileio.delete(path)
    fileio.delete(path)  # a missing file is not an error
    assert not fileio.exists(path)


def test_walk_and_delete_tree(where: tuple[FileIO, str]) -> None:
    fileio, base = where
    for name in ("t/a", "t/sub/b", "t2/c"):
        fileio.write_unique(f"{base}/{name}", name.encode())
    assert sorted(f.path for f in fileio.walk(f"{base}/t")) == [f"{base}/t/a", f"{base}/t/sub/b"]
    fileio.delete_tree(f"{base}/t")
    assert fileio.walk(f"{base}/t") == []
    assert fileio.read(f"{base}/t2/c") == b"t2/c"  # a sibling sharing the name's prefix stays


def test_s3_writes_leave_no_directory_markers(seaweedfs: SeaweedFS) -> None:
    base = f"s3://{BUCKET}/markers-{uuid.uuid4().hex[:12]}"
    fileio = ObjectStoreFileIO(StoreUri.parse(base))
    fileio.write_new(f"{base}/db.db/t/snapshot/snapshot-1", b"{}")
    fileio.write_unique(f"{base}/db.db/t/manifest/manifest-1", b"m")
    fileio.overwrite(f"{base}/db.db/t/snapshot/LATEST", b"1")
    # Every key under the prefix, as the S3 API lists them: a directory marker written by pyarrow's
    # create_dir shows up here as a key of its own (`.../db.db`, `.../db.db/t`, ...).
    store = S3Store(BUCKET, endpoint=seaweedfs.endpoint_url, virtual_hosted_style_request=False,
                    client_options={"allow_http": True})  # fmt: skip
    prefix = base.removeprefix(f"s3://{BUCKET}/")
    keys = sorted(
        m["path"].removeprefix(prefix + "/") for chunk in obstore.list(store, prefix + "/") for m in chunk
    )
    assert keys == ["db.db/t/manifest/manifest-1", "db.db/t/snapshot/LATEST", "db.db/t/snapshot/snapshot-1"]


def test_s3_conditional_create_has_exactly_one_winner(seaweedfs: SeaweedFS) -> None:
    base = f"s3://{BUCKET}/race-{uuid.uuid4().hex[:12]}"
    fileio = ObjectStoreFileIO(StoreUri.parse(base))
    path = f"{base}/snapshot/snapshot-7"
    start = threading.Barrier(8)
    won: list[int] = []

    def create(writer: int) -> None:
        start.wait()
        try:
            fileio.write_new(path, f"writer {writer}".encode())
        except FileExistsError:
            return
        won.append(writer)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    assert fileio.read(path) == f"writer {won[0]}".encode()


def test_the_warehouse_keeps_its_scheme_and_loses_its_secrets() -> None:
    uri = "s3://KEY:SECRET@bucket/wh/?endpoint_override=127.0.0.1:1&scheme=http&region=r&session_token=T"
    fileio, root = open_warehouse(uri)
    assert isinstance(fileio, ObjectStoreFileIO)
    assert root == "s3://bucket/wh"
    shown = redacted(uri)
    assert "SECRET" not in shown
    assert "KEY" not in shown
    assert shown == "s3://bucket/wh/?endpoint_override=127.0.0.1:1&scheme=http&region=r"
    assert StoreUri.parse("s3a://bucket/wh").location == "s3://bucket/wh"
