"""The format distribution's border: Paimon's on-disk format knows neither the service nor the client, and
imports only the standard library, itself and the distributions paimon-table-format requires."""

from __future__ import annotations

import sys
from importlib.metadata import packages_distributions, requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import paimon_format
from tests.support.module_imports import imported_names, modules_of, within

FORMAT = Path(paimon_format.__file__).parent
MODULES = modules_of(FORMAT)
STDLIB_FROM_3_14 = {"compression"}
"""Imported under `sys.version_info >= (3, 14)`, the backport's standard-library home (manifest.py)."""


def _top_level_imports() -> set[str]:
    names: set[str] = set()
    for module in MODULES:
        names.update(name.split(".")[0] for name in imported_names(module, FORMAT.parent))
    return names - {"", "__future__", "paimon_format"} - set(sys.stdlib_module_names) - STDLIB_FROM_3_14


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.relative_to(FORMAT).as_posix())
def test_the_format_imports_neither_the_service_nor_the_client(module: Path) -> None:
    names = imported_names(module, FORMAT.parent)
    assert not sorted(n for n in names if within(n, "coordinator") or within(n, "coordinator_client"))


def test_the_format_imports_exactly_the_distributions_it_requires() -> None:
    """Every third-party import is a requirement of paimon-table-format, and every requirement is used."""
    required = {canonicalize_name(Requirement(r).name) for r in requires("paimon-table-format") or []}
    providers = packages_distributions()
    used: set[str] = set()
    for name in sorted(_top_level_imports()):
        by = {canonicalize_name(d) for d in providers.get(name, [])} & required
        assert by, f"paimon_format imports {name}, which no requirement of paimon-table-format provides"
        used |= by
    assert used == required
