"""Table and warehouse locations: which of them are local folders, and their one spelling.

The service stores a table's location, the Spark jobs open it, and a registration names it; all three
spell a local folder the same way through `local_path`, so one folder never becomes two locations.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlparse


def local_path(location: str) -> str | None:
    """The absolute, normalised local path a location names; None for another filesystem's URI.

    A plain path (relative ones against the working directory) or a `file:` URI (`file:///x`, `file:/x`,
    `file://localhost/x`) is local; a URI of another scheme (`s3://`, `hdfs://`...) is not.
    """
    if location.startswith("file:"):
        uri = urlparse(location)
        if uri.netloc not in ("", "localhost"):
            return None
        location = unquote(uri.path)
    elif "://" in location:
        return None
    return os.path.abspath(location)
