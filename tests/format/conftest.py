"""The pypaimon-written table the format tests read, built once per module."""

from __future__ import annotations

import pytest

from ._pypaimon_table import PypaimonTable, build_pk_table


@pytest.fixture(scope="module")
def pk_table(tmp_path_factory: pytest.TempPathFactory) -> PypaimonTable:
    """db.t as pypaimon writes it through its own filesystem catalog (build_pk_table)."""
    return build_pk_table(tmp_path_factory.mktemp("warehouse"))
