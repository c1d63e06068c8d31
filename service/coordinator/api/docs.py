"""/docs (Swagger UI) and /redoc, with their scripts and styles served from this service.

FastAPI's own pages load them from a CDN, so they stayed blank on a machine without internet access.
The assets come from the pinned `fastapi-offline` package (Swagger UI 5 and Redoc 2 bundles), which
is installed with the service; its FastAPI factory is not used, only its files. Like /openapi.json, the
pages describe the API and hold no data, so they need no token; Swagger UI's Authorize button takes a
bearer token for the calls it makes.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from coordinator.api.params import AssetName
from coordinator.errors import RouteNotFound

router = APIRouter(include_in_schema=False)

ASSET_DIR = Path(fastapi_offline.__file__).resolve().parent / "static"
STATIC = "/docs/static"
# Only these files are served, so no path from the URL ever reaches the file system.
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
    "favicon.png": "image/png",
}
_SWAGGER_PARAMETERS = {"validatorUrl": None}
"""No badge that posts the document to swagger.io's validator."""
_SAME_ORIGIN_ONLY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' blob:; worker-src 'self' blob:; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'"
)
"""The browser fetches nothing from another host for these pages: Redoc's sidebar draws its maker's
logo from cdn.redoc.ly whatever its options say (the image is left out, nothing else changes). Inline
script and style: FastAPI's pages start the bundles with an inline script, and both bundles style
inline."""


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    page = get_swagger_ui_html(
        openapi_url=_root(request) + "/openapi.json",
        title=f"{request.app.title} - Swagger UI",
        swagger_js_url=f"{_root(request)}{STATIC}/swagger-ui-bundle.js",
        swagger_css_url=f"{_root(request)}{STATIC}/swagger-ui.css",
        swagger_favicon_url=f"{_root(request)}{STATIC}/favicon.png",
        swagger_ui_parameters=_SWAGGER_PARAMETERS,
    )
    page.headers["Content-Security-Policy"] = _SAME_ORIGIN_ONLY
    return page


@router.get("/redoc")
def redoc(request: Request) -> HTMLResponse:
    page = get_redoc_html(
        openapi_url=_root(request) + "/openapi.json",
        title=f"{request.app.title} - ReDoc",
        redoc_js_url=f"{_root(request)}{STATIC}/redoc.standalone.js",
        redoc_favicon_url=f"{_root(request)}{STATIC}/favicon.png",
        with_google_fonts=False,
    )
    page.headers["Content-Security-Policy"] = _SAME_ORIGIN_ONLY
    return page


@router.get(STATIC + "/{name}")
def asset(name: AssetName) -> FileResponse:
    if name not in ASSETS:
        raise RouteNotFound(f"no documentation file {name}")
    return FileResponse(ASSET_DIR / name, media_type=ASSETS[name])


def _root(request: Request) -> str:
    """The path prefix the service is mounted under behind a proxy (ASGI root_path), or empty."""
    return str(request.scope.get("root_path", "")).rstrip("/")
