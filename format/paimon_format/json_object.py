"""Loading one JSON object of Paimon metadata (schema, snapshot) written by any writer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def load_object(text: str | bytes, what: str, required: Sequence[str]) -> dict[str, Any]:
    """The parsed object; ValueError naming `what` when it is not JSON, not an object, or lacks a key."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{what} JSON must be an object")
    missing = [key for key in required if data.get(key) is None]
    if missing:
        raise ValueError(f"{what} JSON lacks required key(s): {', '.join(missing)}")
    return data
