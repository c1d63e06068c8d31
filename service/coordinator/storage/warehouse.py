"""The warehouse a service serves: which FileIO reaches it, and its root location."""

from __future__ import annotations

import pyarrow.fs as pafs

from coordinator.storage.fileio import ArrowFileIO, FileIO, LocalFileIO
from coordinator.storage.object_store import ObjectStoreFileIO
from coordinator.storage.store_uri import StoreUri
from paimon_format.location import local_path


def open_warehouse(uri: str) -> tuple[FileIO, str]:
    """The FileIO and the root location for a warehouse folder or URI.

    The root keeps its scheme (`s3://bucket/wh`) but not the URI's connection options or credentials,
    which configure the FileIO only.
    """
    local = local_path(uri)
    if local is not None:
        return LocalFileIO(), local
    store = StoreUri.parse(uri)
    if store.is_object_store:
        return ObjectStoreFileIO(store), store.location
    fs, path = pafs.FileSystem.from_uri(uri)
    prefix = f"{store.scheme}://{store.bucket}"
    return ArrowFileIO(fs, prefix), f"{prefix}/{path.strip('/')}".rstrip("/")
