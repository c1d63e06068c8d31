"""create_app(): the FastAPI application, its lifespan, its middleware (request ids, body-size guard)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from coordinator.api import (
    commits,
    dashboard,
    docs,
    events,
    maintenance,
    ops,
    publishers,
    rest_catalog,
    snapshots,
    tables,
    transactions,
)
from coordinator.api.body_limit import BodyLimit
from coordinator.api.collection_pause import settle_for_serving
from coordinator.api.commit_body import with_commit_request
from coordinator.api.deps import LockThreads
from coordinator.api.errors import install
from coordinator.api.forwarding import Forwarder
from coordinator.observability.logs import RequestContext
from coordinator.services import Services
from coordinator.settings import Settings

API_VERSION = "0.1.0"
LOCK_THREADS = 40
"""Commits and maintenance run on this many threads of their own (api/deps.py::LockThreads); every other
route keeps AnyIO's default 40."""


FORWARD_ANSWER_MARGIN_SECONDS = 60.0
"""A forwarded commit may wait at its holder for the lock as long as anywhere, and is then committed."""


def forwarder(settings: Settings, services: Services) -> Forwarder | None:
    """With an advertise_url, commits may be forwarded to the replica holding their table's lock."""
    if settings.advertise_url is None:
        return None
    timeout = settings.lock_acquire_timeout_seconds + FORWARD_ANSWER_MARGIN_SECONDS
    return Forwarder(settings.advertise_url, timeout, services.metrics)


def create_app(settings: Settings | None = None, *, serving: bool = False) -> FastAPI:
    """The coordinator's ASGI app; engines and pools are created in the lifespan, never at import.

    `serving`: the app is the process's own (`coordinator serve`), which then settles its garbage
    collector once started (api/collection_pause.py); an app in a test leaves the interpreter it
    shares as it is."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.services = Services.start(settings)
        app.state.lock_threads = LockThreads(LOCK_THREADS)
        app.state.forwarder = forwarder(settings, app.state.services)
        if serving:
            settle_for_serving()
        try:
            yield
        finally:
            if app.state.forwarder is not None:
                await app.state.forwarder.close()
            app.state.services.close()

    app = FastAPI(
        title="Paimon Commit Coordinator",
        version=API_VERSION,
        description="Centralized commits, locks and conflict detection for Apache Paimon tables.",
        lifespan=lifespan,
        # FastAPI's own pages load their scripts from a CDN; api/docs.py serves them from the package.
        docs_url=None,
        redoc_url=None,
    )
    install(app)
    generated = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = with_commit_request(generated())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    # Outermost, so the access line covers every answer, the body guard's 413 included.
    app.add_middleware(RequestContext)
    for router in (
        tables.router,
        commits.router,
        transactions.router,
        snapshots.router,
        maintenance.router,
        ops.router,
        ops.readers,
        events.router,
        publishers.router,
        dashboard.router,
        docs.router,
        # Last: its 501 fallback answers every /v1 path no route before it matched.
        rest_catalog.router,
    ):
        app.include_router(router)
    return app
