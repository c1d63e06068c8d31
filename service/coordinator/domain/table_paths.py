"""Every path a writer sends stays inside its table.

Paimon names a table's files by bare names that readers join onto a folder of the table (`manifest/`,
`<partition>/bucket-<n>/`, `index/`, `statistics/`); only `externalPath` (a data or index file written
under one of the roots the table's option `data-file.external-paths` lists) is a whole location. A name
with a `/` in it, or that is `..`, would reach out of that folder: one table's writer could make the
coordinator list another table's files as its own, and its maintenance delete them. So:

- `name_problem`: a bare name is a non-empty string of at most 255 bytes (UTF-8: a longer one is no file
  name on any filesystem), not `.` or `..`, without `/` or `\\`, and without NUL or other control
  characters (PostgreSQL's text refuses NUL; no store keeps control characters in a name reliably).
- `external_problem`: an external path lies strictly inside one of the table's external roots (none
  set: no external path is allowed), with the root's scheme, spelled without `.` or `..` segments.
- `inside`: what every delete of the coordinator asks first: does the location lie strictly inside the
  table's folder, spelled without `.` or `..` segments, so that the folder the check normalises is the
  one the store resolves (local paths and `s3://` URIs alike, see domain/locations).

Pure: no filesystem.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from coordinator.domain.locations import contains, location_key
from coordinator.errors import PathOutsideTable

EXTERNAL_PATHS = "data-file.external-paths"
"""Paimon's table option: comma-separated roots where writers may put data files outside the table."""

MAX_NAME_BYTES = 255

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")

NAMING = (
    "entries are named <manifest list>[i].entries[j]: the i-th manifest of that list and the j-th "
    "entry of that manifest (indexManifest.entries[j]: the j-th entry of the index manifest), "
    "counted from 0"
)
"""Said in every refusal of an entry, so the writer can find the entry a field names."""


def with_naming(message: str, field: str) -> str:
    """`message`, and how entries are named when `field` names one."""
    return f"{message} ({NAMING})" if ".entries[" in field else message


def name_problem(name: object) -> str | None:
    """Why `name` is not a bare file name, or None when it is one."""
    if (
        type(name) is str
        and name.isascii()
        and name.isprintable()  # printable ASCII: no control character, one byte a character
        and 0 < len(name) <= MAX_NAME_BYTES
        and "/" not in name
        and "\\" not in name
        and name not in (".", "..")
    ):
        return None  # the common case, decided in C: a commit checks a name per file
    if not isinstance(name, str):
        return f"a file name must be a string, not {type(name).__name__}"
    if not name:
        return "a file name cannot be empty"
    if name in (".", ".."):
        return f"{name!r} names a folder, not a file"
    if "/" in name or "\\" in name:
        return f"{name!r} is not a bare file name: it has a path separator"
    if has_control(name):
        return f"{name!r} has a NUL or control character"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"a file name has at most {MAX_NAME_BYTES} bytes, this one {len(name.encode())}"
    return None


def check_name(name: object, field: str, what: str = "file") -> str:
    """`name` when it is a bare file name.

    Raises:
        PathOutsideTable: naming `field`.
    """
    problem = name_problem(name)
    if problem is not None:
        raise PathOutsideTable(with_naming(f"{field}: {what} name refused: {problem}", field), field=field)
    assert isinstance(name, str)
    return name


def external_roots(options: Mapping[str, str]) -> tuple[str, ...]:
    """The roots the table's options allow external data files under; () when they allow none."""
    raw = options.get(EXTERNAL_PATHS, "")
    return tuple(root.strip() for root in raw.split(",") if root.strip())


def external_problem(path: object, roots: tuple[str, ...]) -> str | None:
    """Why `path` is not an external path the table allows, or None when it is one."""
    if not isinstance(path, str):
        return f"an external path must be a string, not {type(path).__name__}"
    if not roots:
        return f"the table allows no external paths (its option {EXTERNAL_PATHS} is not set)"
    if not _plainly_spelled(path):
        return f"{path!r} has '.' or '..' segments, an empty segment or control characters"
    for root in roots:
        if _scheme(root) == _scheme(path) and _strictly_inside(root, path):
            return None
    return f"{path!r} lies under none of the table's external roots ({', '.join(roots)})"


def check_external_path(path: object, roots: tuple[str, ...], field: str) -> str:
    """`path` when it lies strictly inside one of `roots`.

    Raises:
        PathOutsideTable: naming `field`.
    """
    problem = external_problem(path, roots)
    if problem is not None:
        message = f"{field}: external path refused: {problem}"
        raise PathOutsideTable(with_naming(message, field), field=field)
    assert isinstance(path, str)
    return path


def inside(folder: str, path: str) -> bool:
    """True when `path` lies strictly inside `folder` (never `folder` itself) and is spelled without
    `.`/`..` or empty segments: where a delete of the coordinator may reach."""
    if not _plain_segments(path[len(folder) :] if path.startswith(folder) else path):
        return False
    return _strictly_inside(folder, path)


def has_control(text: str) -> bool:
    """True when `text` holds NUL or another control character: no store names a file by it reliably
    (a local filesystem refuses NUL), so such a name is never handed to a delete."""
    return _CONTROL.search(text) is not None


def check_inside(folder: str, path: str, what: str) -> None:
    """Raises PathOutsideTable unless `path` lies strictly inside the table folder `folder`, without
    control characters: the last check before a delete."""
    if not inside(folder, path) or has_control(path):
        raise PathOutsideTable(
            f"refused to delete {path!r} ({what}): it does not lie inside the table's folder {folder}; "
            "nothing was deleted",
            field=None,
        )


def _strictly_inside(folder: str, path: str) -> bool:
    try:
        return location_key(folder) != location_key(path) and contains(folder, path)
    except ValueError:
        return False


def _plainly_spelled(path: str) -> bool:
    """No control character, and `_plain_segments`."""
    return not has_control(path) and _plain_segments(path)


def _plain_segments(path: str) -> bool:
    """No `.` or `..` segment, no empty segment past a URI's `//` or a leading `/`: the path means the
    same to the store as it does to `location_key`."""
    scheme, sep, rest = path.partition("://")
    body = rest if sep and scheme.isalnum() else path
    segments = body.split("/")
    if body.startswith("/"):
        segments = segments[1:]
    return all(s not in ("", ".", "..") for s in segments)


def _scheme(location: str) -> str:
    head, sep, _ = location.partition("://")
    if not sep or not head.isalnum():
        return "file"
    scheme = head.lower()
    return {"s3a": "s3", "s3n": "s3"}.get(scheme, scheme)
