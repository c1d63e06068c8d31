"""Fixtures: every behaviour test runs on SQLite and on the PostgreSQL server at 127.0.0.1:5432; the
storage-touching modules (those that set `STORES = ("local", "s3")`) also run on a real S3 store
(SeaweedFS on loopback, started once per session)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from fastapi.testclient import TestClient

from coordinator.app import create_app
from coordinator.db.migrate import upgrade
from coordinator.services import Services
from coordinator.settings import Settings
from coordinator_client import CoordinatorClient
from tests.support.databases import fresh_database, postgres_database
from tests.support.seaweed import BUCKET, SeaweedFS
from tests.support.served import LiveServer

if TYPE_CHECKING:
    from playwright.sync_api import Browser

SPARK_TESTS = Path(__file__).parent / "spark"
FLINK_TESTS = Path(__file__).parent / "flink"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark what the fast lane leaves out by what a test needs, so nobody has to remember the markers."""
    for item in items:
        if item.path.is_relative_to(SPARK_TESTS):
            item.add_marker(pytest.mark.spark)
        if item.path.is_relative_to(FLINK_TESTS):
            item.add_marker(pytest.mark.flink)
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


@pytest.fixture
def live_server(settings: Settings) -> Iterator[LiveServer]:
    with LiveServer(settings) as server:
        yield server


@pytest.fixture
def http(live_server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server.url, timeout=60) as client:
        yield client


@pytest.fixture
def client(live_server: LiveServer) -> Iterator[CoordinatorClient]:
    """The client package against the live server."""
    with CoordinatorClient(live_server.url, timeout=60) as c:
        yield c


@pytest.fixture
def secured(settings: Settings) -> Iterator[LiveServer]:
    """A live server that requires tokens; the test creates the tokens it needs."""
    with LiveServer(settings.model_copy(update={"require_tokens": True})) as server:
        yield server


@pytest.fixture
def anyio_backend() -> str:
    """The async tests run on asyncio (anyio's pytest plugin)."""
    return "asyncio"


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
