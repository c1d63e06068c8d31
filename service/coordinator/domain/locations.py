"""Which folder a table location names, so that one folder is never two tables.

A location reaches the service in several spellings: a plain absolute path or a `file:` URI for local
disk; `s3://bucket/wh/db.db/t` (or `s3a://`, `S3://`, with pyarrow's `?endpoint_override=...&region=...`
and perhaps `key:secret@` credentials) for an object store; and, in rows recorded before locations kept
their scheme, the bare filesystem path pyarrow gave, `bucket/wh/db.db/t`. `location_key` maps all
spellings of one folder to one key:

    local folder          /abs/path            (`file:`, `file://localhost`, plain paths alike)
    any other filesystem  //authority/path     (bucket or host:port first; scheme, query and
                                                credentials dropped)

The key drops the scheme of a non-local location because a coordinator reaches every table through the
one filesystem of its warehouse (storage.fileio), and because the bare form of older rows has no scheme
to compare: `s3://b/wh/t`, `s3a://b/wh/t` and the older `b/wh/t` are one folder. Slashes are collapsed,
a trailing slash dropped, `.` and `..` segments resolved (that may call two spellings one folder that a
store keeps apart, which only ever refuses a registration, never allows one). The authority is
lower-cased (host names are case-insensitive, bucket names lower-case); paths keep their case.

A relative path here is the bare object-store form, never a local path relative to a working directory:
callers resolve a request's local path first (paimon_format.location.local_path), as the
service stores it.

Pure: no filesystem, no working directory.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

_LOCAL_HOSTS = ("", "localhost")


def location_key(location: str) -> str:
    """The one key of the folder `location` names (see the module docstring).

    Raises:
        ValueError: an empty location, or one that names no folder (a URI without bucket or host).
    """
    if not location.strip():
        raise ValueError("a table location cannot be empty")
    scheme, rest = _scheme(location)
    if scheme:
        uri = urlsplit(f"x:{rest}")  # the scheme was checked already; urlsplit only splits the rest
        host = (uri.hostname or "").lower()  # without user-info (credentials) and lower-cased
        authority = f"{host}:{uri.port}" if uri.port is not None else host
        path = unquote(uri.path)  # as pyarrow and local_path decode a URI's path
        if scheme == "file" and authority in _LOCAL_HOSTS:
            return _absolute(path)
        if not rest.startswith("//"):
            raise ValueError(f"{location!r} names no bucket or host")
    elif location.startswith("/") and not location.startswith("//"):
        return _absolute(location)
    else:  # the bare `bucket/path` of older object-store rows, or an already-made `//authority/path` key
        authority, _, path = location.lstrip("/").partition("/")
        authority = authority.lower()
    if not authority:
        raise ValueError(f"{location!r} names no bucket or host")
    segments = _segments(path)
    return "//" + "/".join([authority, *segments])


def overlaps(a: str, b: str) -> bool:
    """True when two locations name one folder, or one lies inside the other (segment-wise: `/wh/t`
    and `/wh/t2` do not overlap)."""
    return contains(a, b) or contains(b, a)


def contains(outer: str, inner: str) -> bool:
    """True when `inner` is the folder `outer` or lies inside it."""
    outer_parts, inner_parts = _parts(location_key(outer)), _parts(location_key(inner))
    return inner_parts[: len(outer_parts)] == outer_parts


def ancestor_keys(key: str) -> list[str]:
    """The keys of every folder that encloses the folder of `key`, outermost first (its root included):
    a bounded set to look up, however many tables there are."""
    root, *segments = _parts(key)
    found = [root]
    for n in range(1, len(segments)):
        found.append(_join(root, segments[:n]))
    return found


def is_root(key: str) -> bool:
    """True for the root of a filesystem or bucket, which no table can own."""
    return len(_parts(key)) == 1


def _scheme(location: str) -> tuple[str, str]:
    """(lower-cased scheme, the rest after `scheme:`); ('', location) for a path."""
    head, sep, rest = location.partition(":")
    if not sep or not head or "/" in head or not (head[0].isalpha() and head.isascii()):
        return "", location
    if not all(c.isalnum() or c in "+-." for c in head):
        return "", location
    return head.lower(), rest


def _absolute(path: str) -> str:
    return "/" + "/".join(_segments(path))


def _segments(path: str) -> list[str]:
    """Path segments with empty ones (duplicate and trailing slashes) and `.` dropped, `..` resolved."""
    out: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if out:
                out.pop()
            continue
        out.append(segment)
    return out


def _parts(key: str) -> list[str]:
    """[root, segment, ...] of a key: root `/` for local, `//authority` otherwise."""
    if key.startswith("//"):
        authority, _, path = key[2:].partition("/")
        return [f"//{authority}", *_segments(path)]
    return ["/", *_segments(key)]


def _join(root: str, segments: list[str]) -> str:
    return root + "/".join(segments) if root == "/" else "/".join([root, *segments])
