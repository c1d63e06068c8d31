"""Waiting, with a deadline, for what another thread or process does."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T | None], what: str, seconds: float = 30, every: float = 0.05) -> T:
    """Call `predicate` until it returns something true, and return that; fails naming `what` once
    `seconds` have passed."""
    deadline = time.monotonic() + seconds
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)
    return value
