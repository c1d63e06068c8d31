"""The `workers` setting and where a worker tells its siblings to reach it (coordinator/workers.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from coordinator.cli import _settings, parser
from coordinator.settings import Settings
from coordinator.workers import private_url

PG = "postgresql://postgres@127.0.0.1:5432/coordinator"


def test_one_worker_by_default_and_at_most_64() -> None:
    assert Settings().workers == 1
    assert Settings(workers=64, database_url=PG).workers == 64
    for refused in (0, 65):
        with pytest.raises(ValidationError):
            Settings(workers=refused)


def test_the_flag_and_the_variable_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COORDINATOR_WORKERS", "3")
    assert _settings(parser().parse_args(["serve"])).workers == 3
    assert _settings(parser().parse_args(["serve", "--workers", "5"])).workers == 5


def test_more_than_one_worker_needs_a_server_database() -> None:
    assert Settings(workers=1).workers_refused() is None
    assert Settings(workers=4, database_url=PG).workers_refused() is None
    refused = Settings(workers=2, database_url="sqlite:///./x.db").workers_refused()
    assert refused is not None
    assert "workers=2" in refused


@pytest.mark.parametrize(
    ("host", "advertise_url", "expected"),
    [
        ("127.0.0.1", None, "http://127.0.0.1:4711"),
        ("0.0.0.0", None, "http://127.0.0.1:4711"),
        ("::", None, "http://[::1]:4711"),
        ("10.0.0.5", None, "http://10.0.0.5:4711"),
        ("0.0.0.0", "https://coordinator-3.internal:8080/", "https://coordinator-3.internal:4711"),
        ("0.0.0.0", "http://10.0.0.5:8080", "http://10.0.0.5:4711"),
    ],
)
def test_a_worker_advertises_its_private_port(host: str, advertise_url: str | None, expected: str) -> None:
    settings = Settings(host=host, advertise_url=advertise_url, allow_open_bind=True)
    assert private_url(settings, 4711) == expected
