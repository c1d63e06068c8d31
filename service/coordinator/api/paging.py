"""The paging parameters of the table list and the overview: limit, page_token, database, name_prefix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends

from coordinator.api.params import DEFAULT_PAGE, DatabaseFilter, NamePrefix, PageToken, TablesLimit


@dataclass(frozen=True)
class TablePageQuery:
    limit: int
    page_token: str | None
    database: str | None
    name_prefix: str | None


async def table_page(
    limit: TablesLimit = DEFAULT_PAGE,
    page_token: PageToken = None,
    database: DatabaseFilter = None,
    name_prefix: NamePrefix = None,
) -> TablePageQuery:
    return TablePageQuery(limit, page_token, database, name_prefix)


TablePageDep = Annotated[TablePageQuery, Depends(table_page)]
