"""FileIO: the few storage operations a commit needs, over local disk or any pyarrow filesystem.

Paths are absolute locations: a local path, or a URI with its scheme (`s3://bucket/wh/db.db/t/...`),
the same spelling tables answer with and Spark jobs open.

`write_new` is the only way snapshot files are written: it never overwrites, so a published snapshot is
immutable, whoever else writes to the table. On local disk it is atomic (hard link of a fully written
temp file); on an object store it is a conditional create (storage.object_store). Manifests take the
cheaper `write_unique`: their names are fresh and nothing references them until the commit point, so
no reader can see one half written.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pyarrow.fs as pafs


class FileIO(Protocol):
    """Storage operations on absolute paths of one filesystem."""

    def read(self, path: str) -> bytes: ...

    def write_new(self, path: str, data: bytes) -> None:
        """Create `path` with `data`; raise FileExistsError if it exists."""
        ...

    def write_unique(self, path: str, data: bytes) -> None:
        """Create a file under a fresh unique name that nothing references yet: no atomic publication
        and no existence check, since no reader can look for it before its writer is done."""
        ...

    def overwrite(self, path: str, data: bytes) -> None: ...

    def exists(self, path: str) -> bool: ...

    def size(self, path: str) -> int | None:
        """The file's size in bytes; None when it does not exist."""
        ...

    def read_tail(self, path: str, length: int) -> FileRange | None:
        """The last `length` bytes of a file (all of it when shorter) and its size, in one read (one
        ranged GET on an object store); None when it does not exist."""
        ...

    def read_range(self, path: str, offset: int, length: int) -> FileRange | None:
        """Up to `length` bytes from `offset` and the file's size, in one read; None when it does not
        exist."""
        ...

    def delete(self, path: str) -> None:
        """Remove a file; a missing file is not an error."""
        ...

    def list_names(self, directory: str) -> list[str]:
        """Base names of the files in a directory; [] when it does not exist."""
        ...

    def delete_tree(self, directory: str) -> None: ...

    def walk(self, directory: str) -> list[StoredFile]:
        """Every file under `directory`, recursively, with its modification time; [] when absent."""
        ...


@dataclass(frozen=True)
class FileRange:
    """Bytes read from a file by range, with where they start and the size of the whole file: one read
    answers both how big a data file is and what its footer says."""

    size: int
    offset: int
    data: bytes


@dataclass(frozen=True)
class StoredFile:
    path: str
    modified_seconds: float
    """Modification time, epoch seconds: orphan cleanup spares files younger than its threshold."""


class LocalFileIO:
    """Local disk through os calls: the embedded default, and the fastest path."""

    def read(self, path: str) -> bytes:
        return Path(path).read_bytes()

    def write_new(self, path: str, data: bytes) -> None:
        tmp = _written_beside(path, data)
        try:
            os.link(tmp, path)  # fails with FileExistsError instead of replacing, unlike rename
        finally:
            os.unlink(tmp)

    def write_unique(self, path: str, data: bytes) -> None:
        try:
            f = open(path, "xb")  # exclusive all the same: a name clash must never overwrite
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            f = open(path, "xb")
        with f:
            f.write(data)

    def overwrite(self, path: str, data: bytes) -> None:
        os.replace(_written_beside(path, data), path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def size(self, path: str) -> int | None:
        try:
            return os.stat(path).st_size
        except FileNotFoundError:
            return None

    def read_tail(self, path: str, length: int) -> FileRange | None:
        return self._pread(path, length, None)

    def read_range(self, path: str, offset: int, length: int) -> FileRange | None:
        return self._pread(path, length, offset)

    @staticmethod
    def _pread(path: str, length: int, offset: int | None) -> FileRange | None:
        """One open, fstat and pread: the size and the bytes come from the same open file."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            size = os.fstat(fd).st_size
            start = max(0, size - length) if offset is None else min(offset, size)
            return FileRange(size, start, os.pread(fd, min(length, size - start), start))
        except IsADirectoryError:
            return None  # a folder where the file should be: no file
        finally:
            os.close(fd)

    def delete(self, path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    def list_names(self, directory: str) -> list[str]:
        try:
            return [e.name for e in os.scandir(directory) if e.is_file()]
        except FileNotFoundError:
            return []

    def delete_tree(self, directory: str) -> None:
        import shutil

        shutil.rmtree(directory, ignore_errors=True)

    def walk(self, directory: str) -> list[StoredFile]:
        out = []
        for folder, _, names in os.walk(directory):
            for name in names:
                path = os.path.join(folder, name)
                try:
                    out.append(StoredFile(path, os.stat(path).st_mtime))
                except FileNotFoundError:
                    continue  # deleted while we looked
        return out


def _written_beside(path: str, data: bytes) -> str:
    """A fully written hidden temp file in `path`'s folder (created if missing), to be moved into place."""
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "xb") as f:
        f.write(data)
    return tmp


class ArrowFileIO:
    """Any other pyarrow filesystem (hdfs://, ...), whose locations are `prefix` + the filesystem's path."""

    def __init__(self, fs: pafs.FileSystem, prefix: str = "") -> None:
        self._fs = fs
        self._prefix = prefix

    def read(self, path: str) -> bytes:
        with self._fs.open_input_stream(self._p(path)) as f:
            return bytes(f.read())

    def write_new(self, path: str, data: bytes) -> None:
        if self.exists(path):
            raise FileExistsError(path)
        self.overwrite(path, data)

    def write_unique(self, path: str, data: bytes) -> None:
        self.overwrite(path, data)

    def overwrite(self, path: str, data: bytes) -> None:
        path = self._p(path)
        self._fs.create_dir(path.rsplit("/", 1)[0], recursive=True)  # a real folder on these filesystems
        with self._fs.open_output_stream(path) as f:
            f.write(data)

    def exists(self, path: str) -> bool:
        return self.size(path) is not None

    def size(self, path: str) -> int | None:
        info = self._fs.get_file_info(self._p(path))
        return None if info.type == pafs.FileType.NotFound else info.size

    def read_tail(self, path: str, length: int) -> FileRange | None:
        return self._read_at(path, length, None)

    def read_range(self, path: str, offset: int, length: int) -> FileRange | None:
        return self._read_at(path, length, offset)

    def _read_at(self, path: str, length: int, offset: int | None) -> FileRange | None:
        try:
            with self._fs.open_input_file(self._p(path)) as f:
                size = f.size()
                start = max(0, size - length) if offset is None else min(offset, size)
                return FileRange(size, start, bytes(f.read_at(min(length, size - start), start)))
        except FileNotFoundError:
            return None

    def delete(self, path: str) -> None:
        try:
            self._fs.delete_file(self._p(path))
        except FileNotFoundError:
            pass

    def list_names(self, directory: str) -> list[str]:
        infos = self._fs.get_file_info(pafs.FileSelector(self._p(directory), allow_not_found=True))
        return [i.base_name for i in infos if i.type == pafs.FileType.File]

    def delete_tree(self, directory: str) -> None:
        try:
            self._fs.delete_dir(self._p(directory))
        except FileNotFoundError:
            pass

    def walk(self, directory: str) -> list[StoredFile]:
        infos = self._fs.get_file_info(
            pafs.FileSelector(self._p(directory), recursive=True, allow_not_found=True)
        )
        return [
            StoredFile(self._prefix + i.path, i.mtime.timestamp() if i.mtime is not None else 0.0)
            for i in infos
            if i.type == pafs.FileType.File
        ]

    def _p(self, location: str) -> str:
        """The filesystem's own path of a location."""
        return location[len(self._prefix) :] if location.startswith(self._prefix) else location
