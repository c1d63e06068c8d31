"""maxResults, pageToken and the name patterns of Paimon's list endpoints."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from fastapi import Query

from coordinator.api.params import DEFAULT_PAGE, MAX_PAGE
from coordinator.errors import InvalidRequest
from coordinator_client.models import PRINTABLE_PATTERN

MaxResults = Annotated[int, Query(alias="maxResults", ge=1, le=MAX_PAGE, description="entries per page")]
PageToken = Annotated[
    str | None,
    Query(alias="pageToken", max_length=600, pattern=PRINTABLE_PATTERN, description="the previous page's"),
]
DEFAULT = DEFAULT_PAGE
DatabaseNamePattern = Annotated[
    str | None, Query(alias="databaseNamePattern", max_length=129, pattern=PRINTABLE_PATTERN)
]
TableNamePattern = Annotated[
    str | None, Query(alias="tableNamePattern", max_length=129, pattern=PRINTABLE_PATTERN)
]
TableType = Annotated[str | None, Query(alias="tableType", max_length=64, pattern=PRINTABLE_PATTERN)]

_STEM = re.compile(r"[A-Za-z0-9_\-]{1,128}")


@dataclass(frozen=True)
class NamePattern:
    """A SQL LIKE pattern as Paimon serves them: a whole name, or a name prefix followed by `%`.
    `_` stands for itself (table names are full of them), not for any one character."""

    prefix: str | None
    exact: bool

    @classmethod
    def of(cls, pattern: str | None, *, field: str) -> NamePattern:
        """Raises: InvalidRequest naming `field` for any other pattern."""
        if not pattern:
            return cls(None, exact=False)
        stem = pattern.removesuffix("%")
        if not _STEM.fullmatch(stem):
            raise InvalidRequest(f"{pattern!r}: only a name, or a name prefix and %, is served", field=field)
        return cls(stem, exact=stem == pattern)

    def matches(self, name: str) -> bool:
        if self.prefix is None:
            return True
        return name == self.prefix if self.exact else name.startswith(self.prefix)

    def select(self, names: list[str], next_page: str | None) -> tuple[list[str], str | None]:
        """The names of a page listed by `prefix` that match, and the next page's token. A whole name
        sorts before every longer name it prefixes, so its first page holds it or nothing does."""
        if not self.exact:
            return names, next_page
        return [n for n in names if n == self.prefix], None
