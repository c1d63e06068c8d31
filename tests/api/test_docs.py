"""/docs and /redoc work on a machine without internet access: their scripts, styles and icon come from
the service (the pinned fastapi-offline package's files), never from a CDN, also with tokens required."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Route, expect

from tests.support.served import LiveServer

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def test_docs_pages_load_only_what_the_service_serves(secured: LiveServer) -> None:
    with httpx.Client(base_url=secured.url, timeout=30) as http:
        for page, wanted in (
            ("/docs", {"swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"}),
            ("/redoc", {"redoc.standalone.js", "favicon.png"}),
        ):
            html = http.get(page)
            assert html.status_code == 200
            assert "text/html" in html.headers["content-type"]
            # No absolute URL anywhere in the page: nothing is fetched from another host.
            assert not re.search(r"https?://", html.text), page
            assert "default-src 'self'" in html.headers["content-security-policy"]
            assets = set(re.findall(r'(?:src|href)="/docs/static/([^"]+)"', html.text))
            assert assets == wanted, page
            for name in assets:
                served = http.get(f"/docs/static/{name}")
                assert served.status_code == 200, name
                assert len(served.content) > 1000, name  # the real bundle, not an error page
        assert b"SwaggerUIBundle" in http.get("/docs/static/swagger-ui-bundle.js").content
        # Only the named files: nothing else of the package, and no path from the URL.
        for name in ("core.py", "..%2F__init__.py", "redoc.js"):
            assert http.get(f"/docs/static/{name}").status_code == 404, name


@pytest.mark.timeout(120)
def test_swagger_ui_and_redoc_render_with_the_internet_cut_off(secured: LiveServer, browser: Browser) -> None:
    host = urlsplit(secured.url).netloc
    elsewhere: list[str] = []

    def only_this_server(route: Route) -> None:
        if urlsplit(route.request.url).netloc == host:
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/*", only_this_server)
    page.goto(f"{secured.url}/docs")
    # Swagger UI drew the document: its title and an operation of the API.
    expect(page.locator(".information-container .title")).to_contain_text(
        "Paimon Commit Coordinator", timeout=30_000
    )
    expect(page.locator(".opblock-summary-path", has_text="/tables/{table_id}/commits").first).to_be_visible()
    page.goto(f"{secured.url}/redoc")
    expect(page.locator("h1", has_text="Paimon Commit Coordinator")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("/tables/{table_id}/commits").first).to_be_attached()
    # Not even Redoc's logo, which its sidebar asks cdn.redoc.ly for: the page's policy keeps it home.
    assert elsewhere == []
    assert errors == []
