"""Warehouse URIs: where the tables live, and how to reach the store, kept apart.

A warehouse is given as a folder or a URI such as
`s3://bucket/wh?endpoint_override=127.0.0.1:8333&scheme=http&region=us-east-1` (pyarrow's spelling,
which the coordinator has always accepted). The connection part (endpoint, region, credentials) configures
the store once; the location part (`s3://bucket/wh`) is what tables are named by, what answers carry and
what Spark jobs open. Credentials never leave this module except into the store's configuration: `redacted`
is the only spelling of a URI that may be logged or shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from paimon_format.location import local_path

OBJECT_STORE_SCHEMES = {
    "s3": "s3",
    "s3a": "s3",
    "s3n": "s3",
    "gs": "gs",
    "gcs": "gs",
    "az": "az",
    "abfs": "az",
}
"""URI schemes served by an object store, and the scheme each is answered under."""


@dataclass(frozen=True)
class StoreUri:
    scheme: str
    """Canonical: `s3` for s3/s3a/s3n, `gs`, `az`, or another filesystem's own scheme."""
    bucket: str
    """The bucket (or container, or an HDFS name node) named by the URI's authority, without user info."""
    path: str
    """The key prefix inside the bucket, without leading or trailing slashes."""
    options: dict[str, str] = field(default_factory=dict)
    """The query parameters: pyarrow's `endpoint_override`, `scheme`, `region` and the like."""
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, uri: str) -> StoreUri:
        """Raises:
        ValueError: not a `scheme://authority/path` URI.
        """
        parts = urlsplit(uri)
        if not parts.scheme or not parts.hostname:
            raise ValueError("expected scheme://bucket/path")
        scheme = OBJECT_STORE_SCHEMES.get(parts.scheme.lower(), parts.scheme.lower())
        authority = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
        return cls(
            scheme=scheme,
            bucket=authority,
            path=parts.path.strip("/"),
            options=dict(parse_qsl(parts.query)),
            access_key=unquote(parts.username) if parts.username else None,
            secret_key=unquote(parts.password) if parts.password else None,
        )

    @property
    def location(self) -> str:
        """`scheme://bucket/path`: the place, without connection options or credentials."""
        return f"{self.scheme}://{self.bucket}/{self.path}".rstrip("/")

    @property
    def is_object_store(self) -> bool:
        return self.scheme in OBJECT_STORE_SCHEMES.values()

    def key(self, location: str) -> str:
        """The key of `location` in this store's bucket ('' for the bucket's root).

        Raises:
            ValueError: `location` is on another store or bucket.
        """
        other = StoreUri.parse(location)
        if (other.scheme, other.bucket) != (self.scheme, self.bucket):
            raise ValueError(f"{other.location} is not in {self.scheme}://{self.bucket}")
        return other.path


def table_location(given: str, warehouse_root: str) -> str:
    """The one spelling of a table location given by a user (`file://`, `s3a://`, query, trailing
    slashes all folded), checked to be on the warehouse's filesystem, the only one this service reaches.

    Raises:
        ValueError: not a location, or one on another filesystem than the warehouse's.
    """
    local = local_path(given)
    root_is_local = local_path(warehouse_root) is not None
    if local is not None:
        if not root_is_local:
            raise ValueError(f"the warehouse is {warehouse_root}; a local folder is not on its store")
        return local
    location = StoreUri.parse(given).location
    if root_is_local or StoreUri.parse(warehouse_root).scheme != StoreUri.parse(location).scheme:
        raise ValueError(f"the warehouse is {warehouse_root}; {redacted(given)} is not on its filesystem")
    return location


def redacted(uri: str) -> str:
    """`uri` safe to log or show: user info and every query value that could hold a secret dropped."""
    if "://" not in uri:
        return uri
    parts = urlsplit(uri)
    netloc = parts.hostname or ""
    if parts.port is not None:
        netloc = f"{netloc}:{parts.port}"
    kept = [f"{k}={v}" for k, v in parse_qsl(parts.query) if k in PUBLIC_OPTIONS]
    return urlunsplit((parts.scheme, netloc, parts.path, "&".join(kept), ""))


PUBLIC_OPTIONS = frozenset({"endpoint_override", "scheme", "region"})
"""Query parameters that never carry a secret, kept by `redacted`."""
