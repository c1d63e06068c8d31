"""The on-call dashboard: a static page and the overview it polls (with GET /locks and GET /commits)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import FileResponse

from coordinator.api.auth import Caller, listing_scope, reader
from coordinator.api.deps import ServicesDep
from coordinator.api.errors import AUTH_ERRORS, responses
from coordinator.api.paging import TablePageDep
from coordinator.api.params import AssetName, WindowMinutes
from coordinator.errors import InvalidRequest
from coordinator_client.models import OverviewResponse

router = APIRouter(tags=["ops"])

PAGE_DIR = Path(__file__).resolve().parent.parent / "dashboard"
# Only these files are served, so no path from the URL ever reaches the file system.
_ASSETS = {"app.js": "text/javascript", "style.css": "text/css"}
# The page is small and changes with the service: browsers revalidate instead of running a stale copy.
_NO_CACHE = {"Cache-Control": "no-cache"}


# The page and its files hold no data and stay open, so a browser without a token can load the page
# that asks for one; the data behind it needs a reader.
@router.get(
    "/ops/overview", dependencies=[Depends(reader)], responses=AUTH_ERRORS | responses(InvalidRequest)
)
def overview(
    services: ServicesDep,
    page: TablePageDep,
    caller: Caller,
    minutes: WindowMinutes = 30,
) -> OverviewResponse:
    """Totals over every table, one page of tables (as GET /tables pages them) with their size and
    commit outcomes, commits per minute, latency by phase, latest conflicts; from the database alone.
    For a token limited by a grant, all of it over the grant's tables only."""
    return services.overview.overview(
        minutes,
        limit=page.limit,
        page_token=page.page_token,
        database=page.database,
        name_prefix=page.name_prefix,
        scope=listing_scope(caller, page.database),
    )


@router.get("/dashboard", include_in_schema=False)
def page() -> FileResponse:
    return FileResponse(PAGE_DIR / "index.html", media_type="text/html", headers=_NO_CACHE)


@router.get("/dashboard/static/{name}", include_in_schema=False)
def asset(name: AssetName) -> FileResponse:
    if name not in _ASSETS:
        raise HTTPException(status_code=404, detail=f"no dashboard file {name}")
    return FileResponse(PAGE_DIR / name, media_type=_ASSETS[name], headers=_NO_CACHE)
