"""Fixtures: every behaviour test runs on SQLite and on the PostgreSQL server at 127.0.0.1:5432; the
storage-touching modules (those that set `STORES = ("local", "s3")`) also run on a real S3 store
(SeaweedFS on loopback, started once per session)."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from coordinator.app import create_app
from coordinator.db.migrate import upgrade
from coordinator.db.models import Base
from coordinator.services import Services
from coordinator.settings import Settings
from tests.databases import postgres_database
from tests.seaweed import BUCKET, SeaweedFS

if TYPE_CHECKING:
    from playwright.sync_api import Browser

SPARK_TESTS = Path(__file__).parent / "spark"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark what the fast lane leaves out by what a test needs, so nobody has to remember the markers."""
    for item in items:
        if item.path.is_relative_to(SPARK_TESTS):
            item.add_marker(pytest.mark.spark)
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "postgres" in callspec.params.values():
            item.add_marker(pytest.mark.postgres)
        if callspec is not None and callspec.params.get("store") == "s3":
            item.add_marker(pytest.mark.s3)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module opts into the S3 tier with `STORES = ("local", "s3")`, a test with
    `@pytest.mark.stores("local", "s3")`; the others run on local disk."""
    if "store" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("stores")
        stores = marker.args if marker is not None else getattr(metafunc.module, "STORES", ("local",))
        metafunc.parametrize("store", stores, indirect=True)


OWNED_TABLES = tuple(name for name in Base.metadata.tables if name != "alembic_version")
"""The tables the service owns, emptied between PostgreSQL tests."""


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session, migrated by Alembic, dropped at the end."""
    with postgres_database("coordinator_test") as url:
        upgrade(url)
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The metadata database of one test: a new SQLite file, or the session's PostgreSQL emptied."""
    return fresh_database(request.param, request, tmp_path)


def fresh_database(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path}/coordinator.db"
        upgrade(url)
        return url
    url: str = request.getfixturevalue("pg_url")
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {', '.join(OWNED_TABLES)} RESTART IDENTITY CASCADE"))
    engine.dispose()
    return url


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "warehouse"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedFS]:
    """One SeaweedFS S3 store for the session; it sets the AWS_* environment that clients read."""
    store = SeaweedFS(tmp_path_factory.mktemp("seaweedfs") / "data")
    store.start()
    try:
        yield store
    finally:
        store.stop()


@pytest.fixture
def store(request: pytest.FixtureRequest) -> str:
    """Where this test's warehouse lives: "local" or "s3" (see pytest_generate_tests)."""
    kind: str = request.param
    if kind == "s3":
        request.getfixturevalue("seaweedfs")
    return kind


@pytest.fixture
def warehouse_location(store: str, warehouse: Path) -> str:
    """The warehouse the service is given: the local folder, or a fresh prefix of the S3 bucket (the
    endpoint comes from AWS_ENDPOINT_URL, as a deployment would set it)."""
    if store == "s3":
        return f"s3://{BUCKET}/wh-{uuid.uuid4().hex[:12]}"
    return str(warehouse)


@pytest.fixture
def settings(database_url: str, warehouse_location: str) -> Settings:
    return Settings(
        database_url=database_url,
        warehouse=warehouse_location,
        auto_migrate=False,
        lock_lease_seconds=5,
        lock_acquire_timeout_seconds=20,
    )


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    """The use cases without HTTP, for tests of the commit path itself."""
    started = Services.start(settings)
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def api(settings: Settings) -> Iterator[TestClient]:
    """The app in-process (lifespan included)."""
    with TestClient(create_app(settings)) as client:
        yield client


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_healthy(url: str, process: subprocess.Popen[Any] | None = None, seconds: float = 60) -> None:
    """Until GET /health answers 200; fails early if the server's `process` exited."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process is None or process.poll() is None, "coordinator exited at start"
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise TimeoutError(f"coordinator at {url} did not become healthy")


class LiveServer:
    """A real uvicorn server on a free loopback port, in a thread of this process."""

    def __init__(self, settings: Settings) -> None:
        self.app = create_app(settings)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    @property
    def url(self) -> str:
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    @property
    def services(self) -> Services:
        """The server's use cases, e.g. to play a second writer of the same instance."""
        services: Services = self.app.state.services
        return services

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)


@pytest.fixture
def live_server(settings: Settings) -> Iterator[LiveServer]:
    with LiveServer(settings) as server:
        yield server


@pytest.fixture
def http(live_server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server.url, timeout=60) as client:
        yield client


CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture
def browser() -> Iterator[Browser]:
    """Headless Chromium (Debian's package) driven by Playwright; missing Chromium fails, never skips."""
    # Imported here, so tests without a browser do not need Playwright installed.
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield launched
        launched.close()
