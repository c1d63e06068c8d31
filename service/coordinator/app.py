"""create_app(): the FastAPI application, its lifespan and its body-size guard."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response

from coordinator.api import commits, ops, snapshots, tables
from coordinator.api.errors import coordinator_error, install
from coordinator.errors import PayloadTooLarge
from coordinator.services import Services
from coordinator.settings import Settings

API_VERSION = "0.1.0"


def create_app(settings: Settings | None = None) -> FastAPI:
    """The coordinator's ASGI app; engines and pools are created in the lifespan, never at import."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.services = Services.start(settings)
        try:
            yield
        finally:
            app.state.services.close()

    app = FastAPI(
        title="Paimon Commit Coordinator",
        version=API_VERSION,
        description="Centralized commits, locks and conflict detection for Apache Paimon tables.",
        lifespan=lifespan,
    )
    install(app)

    @app.middleware("http")
    async def limit_body(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > settings.max_body_bytes:
            error = PayloadTooLarge(f"request body over {settings.max_body_bytes} bytes", field="body")
            return await coordinator_error(request, error)
        return await call_next(request)

    for router in (tables.router, commits.router, snapshots.router, ops.router):
        app.include_router(router)
    return app
