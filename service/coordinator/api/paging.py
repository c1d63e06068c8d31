"""The paging parameters of the table list and the overview: limit, page_token, database, name_prefix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query

from coordinator_client.models import NAME_PATTERN

DEFAULT_PAGE = 100
MAX_PAGE = 1000


@dataclass(frozen=True)
class TablePageQuery:
    limit: int
    page_token: str | None
    database: str | None
    name_prefix: str | None


def table_page(
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="tables per page")] = DEFAULT_PAGE,
    page_token: Annotated[
        str | None, Query(max_length=600, description="nextPageToken of the previous page")
    ] = None,
    database: Annotated[str | None, Query(pattern=NAME_PATTERN, description="only this database")] = None,
    name_prefix: Annotated[
        str | None, Query(max_length=128, description="only tables whose name starts with this")
    ] = None,
) -> TablePageQuery:
    return TablePageQuery(limit, page_token, database, name_prefix)


TablePageDep = Annotated[TablePageQuery, Depends(table_page)]
