"""The Makefile's lanes partition the suite: pytest, given each lane's marker expression as `make` gives it,
collects every test of the suite in exactly one lane; and `make test` runs every lane."""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support import REPO

MAKEFILE = (REPO / "Makefile").read_text()
LANES = dict(re.findall(r"^LANE_([A-Z0-9_]+) := (.+)$", MAKEFILE, re.M))
"""Each lane's marker expression, by its name in the Makefile (LANE_FAST -> FAST)."""


def _target(lane: str) -> str:
    return f"test-{lane.lower()}"


def _collected(*options: str) -> set[str]:
    """The ids of the tests pytest collects from the suite with these options."""
    answer = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *options],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert answer.returncode == 0, answer.stdout[-3000:] + answer.stderr[-3000:]
    return {line for line in answer.stdout.splitlines() if "::" in line}


def test_every_lane_has_a_target_that_make_test_runs() -> None:
    assert set(LANES) == {"FAST", "BROWSER", "POSTGRES", "S3", "SPARK", "FLINK"}
    test_target = re.search(r"^test: (.+)$", MAKEFILE, re.M)
    assert test_target is not None
    prerequisites = test_target.group(1).split()
    assert "lint" in prerequisites
    for lane in LANES:
        assert _target(lane) in prerequisites, lane
        recipe = re.search(rf"^{_target(lane)}: .*\n\t(.+)$", MAKEFILE, re.M)
        assert recipe is not None, lane
        assert recipe.group(1) == f'$(BIN)/pytest -m "$(LANE_{lane})"'


@pytest.mark.slow  # seven collections of the whole suite
def test_the_lanes_partition_the_suite() -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        everything = pool.submit(_collected)
        by_lane = {lane: pool.submit(_collected, "-m", expression) for lane, expression in LANES.items()}
        suite, lanes = everything.result(), {lane: ids.result() for lane, ids in by_lane.items()}
    assert all(lanes.values()), {lane: len(ids) for lane, ids in lanes.items()}
    claimed: dict[str, list[str]] = {}
    for lane, ids in lanes.items():
        for test_id in ids:
            claimed.setdefault(test_id, []).append(lane)
    assert {t: ls for t, ls in claimed.items() if len(ls) > 1} == {}, "tests in more than one lane"
    assert sorted(suite - set(claimed)) == [], "tests in no lane"
    assert set(claimed) == suite
