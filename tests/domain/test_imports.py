"""The domain's border: pure Paimon rules over plain data, which read no wire model and know no API."""

from __future__ import annotations

from pathlib import Path

import pytest

import coordinator.domain
from tests.support.module_imports import imported_names, modules_of, within

DOMAIN = Path(coordinator.domain.__file__).parent
SERVICE = DOMAIN.parent.parent
FORBIDDEN = ("coordinator_client", "coordinator.api")
"""The client distribution (the wire models are coordinator_client.models) and the service's HTTP edge."""


@pytest.mark.parametrize("module", modules_of(DOMAIN), ids=lambda p: p.relative_to(DOMAIN).as_posix())
def test_the_domain_imports_no_wire_model_and_no_api(module: Path) -> None:
    names = imported_names(module, SERVICE)
    assert not sorted(n for n in names if any(within(n, f) for f in FORBIDDEN))


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from coordinator_client.models import CommitRequest", "coordinator_client.models"),
        ("from coordinator_client import models", "coordinator_client.models"),
        ("import coordinator_client.models as wire", "coordinator_client.models"),
        ("from coordinator import api", "coordinator.api"),
        ("from ..api.commit_body import read_commit_request", "coordinator.api.commit_body"),
        ("def f() -> None:\n    from coordinator.api import deps", "coordinator.api.deps"),
    ],
)
def test_an_import_of_the_wire_or_the_api_is_seen(tmp_path: Path, source: str, found: str) -> None:
    module = tmp_path / "coordinator" / "domain" / "probe.py"
    module.parent.mkdir(parents=True)
    module.write_text(source + "\n")
    assert found in imported_names(module, tmp_path)
