"""FileIO on an object store (S3, GCS, Azure) through obstore.

Why obstore and not pyarrow.fs here: snapshot files need a real conditional create (S3
`If-None-Match: *`, GCS generation 0, Azure `If-None-Match`), which pyarrow cannot send; and pyarrow
PUTs an empty directory-marker object for every ancestor before each write and sends a small object as
a three-request multipart upload. Here every write is one PUT, and the store has no directories at all.

A failure of the store itself (unreachable, 5xx after obstore's bounded retries, throttling) surfaces as
`StorageUnavailable`, which the API answers with 503 and Retry-After.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import obstore
from obstore.exceptions import AlreadyExistsError, BaseError, NotFoundError, PreconditionError
from obstore.store import AzureStore, GCSStore, S3Store

from coordinator.errors import StorageUnavailable
from coordinator.storage.fileio import FileRange, StoredFile
from coordinator.storage.store_uri import StoreUri

if TYPE_CHECKING:
    from obstore import GetOptions
    from obstore.store import ClientConfig, ObjectStore, RetryConfig

T = TypeVar("T")

RETRY: RetryConfig = {
    "max_retries": 3,
    "backoff": {"init_backoff": timedelta(milliseconds=50), "max_backoff": timedelta(seconds=1)},
    # obstore's default keeps retrying for three minutes: a commit would hold its lock that long on a
    # store that is down. A few seconds, then 503 and the client's own retry, keeps the lock free.
    "retry_timeout": timedelta(seconds=5),
}
CLIENT: ClientConfig = {"connect_timeout": "2s", "timeout": "30s"}


class ObjectStoreFileIO:
    """Paths are locations in one store: `s3://bucket/key`; other buckets of that store are reached
    with the same configuration."""

    def __init__(self, warehouse: StoreUri) -> None:
        self._warehouse = warehouse
        self._stores: dict[str, ObjectStore] = {}

    def read(self, path: str) -> bytes:
        store, key = self._at(path)
        return _call(lambda: bytes(obstore.get(store, key).bytes()))

    def write_new(self, path: str, data: bytes) -> None:
        store, key = self._at(path)
        try:
            _call(lambda: obstore.put(store, key, data, mode="create", use_multipart=False))
        except (AlreadyExistsError, PreconditionError):
            raise FileExistsError(path) from None

    def write_unique(self, path: str, data: bytes) -> None:
        self.overwrite(path, data)

    def overwrite(self, path: str, data: bytes) -> None:
        store, key = self._at(path)
        _call(lambda: obstore.put(store, key, data, use_multipart=False))

    def exists(self, path: str) -> bool:
        return self.size(path) is not None

    def size(self, path: str) -> int | None:
        store, key = self._at(path)
        try:
            return _call(lambda: obstore.head(store, key)["size"])
        except FileNotFoundError:
            return None

    def read_tail(self, path: str, length: int) -> FileRange | None:
        return self._get_range(path, {"range": {"suffix": length}})

    def read_range(self, path: str, offset: int, length: int) -> FileRange | None:
        return self._get_range(path, {"range": (offset, offset + length)})

    def _get_range(self, path: str, options: GetOptions) -> FileRange | None:
        """One ranged GET: its bytes, and the object's size from the answer (Content-Range)."""
        store, key = self._at(path)

        def get() -> FileRange:
            got = obstore.get(store, key, options=options)
            return FileRange(got.meta["size"], got.range[0], bytes(got.bytes()))

        try:
            return _call(get)
        except FileNotFoundError:
            return None
        except StorageUnavailable:
            # No range of an empty object is satisfiable (416, which obstore reports like any failure);
            # a HEAD tells that case from a failing store.
            if self.size(path) == 0:
                return FileRange(0, 0, b"")
            raise

    def delete(self, path: str) -> None:
        store, key = self._at(path)
        try:
            _call(lambda: obstore.delete(store, key))
        except FileNotFoundError:
            pass

    def list_names(self, directory: str) -> list[str]:
        store, key = self._at(directory)
        listed = _call(lambda: obstore.list_with_delimiter(store, _prefix(key)))
        return [meta["path"].rsplit("/", 1)[-1] for meta in listed["objects"]]

    def delete_tree(self, directory: str) -> None:
        store, key = self._at(directory)
        paths = [meta["path"] for meta in self._listing(store, key)]
        for start in range(0, len(paths), 1000):  # S3's DeleteObjects takes at most 1,000 keys
            batch = paths[start : start + 1000]
            _call(lambda batch=batch: obstore.delete(store, batch))  # type: ignore[misc]

    def walk(self, directory: str) -> list[StoredFile]:
        store, key = self._at(directory)
        root = directory.rstrip("/")
        prefix = _prefix(key)
        return [
            StoredFile(f"{root}/{meta['path'][len(prefix) :]}", meta["last_modified"].timestamp())
            for meta in self._listing(store, key)
        ]

    def _listing(self, store: ObjectStore, key: str) -> list[Any]:
        def collect() -> list[Any]:
            return [meta for chunk in obstore.list(store, _prefix(key), chunk_size=1000) for meta in chunk]

        return _call(collect)

    def _at(self, path: str) -> tuple[ObjectStore, str]:
        """The store of `path`'s bucket and the key in it."""
        where = StoreUri.parse(path)
        if where.scheme != self._warehouse.scheme:
            raise ValueError(
                f"{where.location} is not on the warehouse's store ({self._warehouse.scheme}://)"
            )
        store = self._stores.get(where.bucket)
        if store is None:
            store = self._stores.setdefault(where.bucket, _open(self._warehouse, where.bucket))
        return store, where.path


def _prefix(key: str) -> str:
    return f"{key}/" if key else ""


def _call(operation: Callable[[], T]) -> T:
    """Run one store call; a missing object is FileNotFoundError, a failing store StorageUnavailable."""
    try:
        return operation()
    except FileNotFoundError:
        raise
    except NotFoundError as missing:
        raise FileNotFoundError(str(missing)) from None
    except (AlreadyExistsError, PreconditionError):
        raise
    except (BaseError, OSError, TimeoutError) as failed:
        # The message names the request and the store's answer; obstore puts no secret in it.
        raise StorageUnavailable(
            f"object store failed: {_first_line(failed)}", retry_after_seconds=2
        ) from failed


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _open(warehouse: StoreUri, bucket: str) -> ObjectStore:
    """A store for `bucket`, configured from the warehouse URI's options and the standard environment."""
    if warehouse.scheme == "s3":
        return S3Store(
            bucket, retry_config=RETRY, client_options=_client(_s3_endpoint(warehouse)), **_s3(warehouse)
        )
    if warehouse.scheme == "gs":
        return GCSStore(bucket, retry_config=RETRY, client_options=CLIENT)
    return AzureStore(bucket, retry_config=RETRY, client_options=CLIENT)


def _s3_endpoint(warehouse: StoreUri) -> str | None:
    override = warehouse.options.get("endpoint_override")
    if override:
        return override if "://" in override else f"{warehouse.options.get('scheme', 'https')}://{override}"
    return os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT")


def _s3(warehouse: StoreUri) -> dict[str, Any]:
    config: dict[str, Any] = {}
    endpoint = _s3_endpoint(warehouse)
    if endpoint:
        # A custom endpoint (SeaweedFS, MinIO, Ceph) answers path-style requests; AWS answers both.
        config.update(endpoint=endpoint, virtual_hosted_style_request=False)
    region = warehouse.options.get("region")
    if region:
        config["region"] = region
    if warehouse.access_key and warehouse.secret_key:
        config.update(access_key_id=warehouse.access_key, secret_access_key=warehouse.secret_key)
    return config


def _client(endpoint: str | None) -> ClientConfig:
    if endpoint and endpoint.startswith("http://"):
        return {**CLIENT, "allow_http": True}
    return CLIENT
