"""The files a committable adds, each with the place its request names it, so that a check of the file
on storage (usecases.file_checks) can name the field a writer has to fix."""

from __future__ import annotations

from typing import NamedTuple

from paimon_format.manifest import ManifestEntry

Where = tuple[int, str, int]
"""(message, file list, position in it): `(0, "newFiles", 2)` is `messages[0].newFiles[2]`."""


class AddedFile(NamedTuple):
    """A file a native commit (or a transaction's table) adds: newFiles, changelogFiles, compactAfter
    and compactChangelogFiles. Kept as a tuple of what resolving made anyway: a big commit has tens of
    thousands."""

    entry: ManifestEntry
    where: Where
    schema_declared: bool
    """The writer sent its schemaId; else it was resolved to the table's current schema."""

    @property
    def field(self) -> str:
        return file_field(self.where)


def file_field(where: Where) -> str:
    """The field path of a file, spelled only when it is needed."""
    message, name, position = where
    return f"messages[{message}].{name}[{position}]"
