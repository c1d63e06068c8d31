"""The OpenAPI document generated from the app; openapi/openapi.json is this, committed."""

from __future__ import annotations

from typing import Any

from coordinator.app import create_app


def openapi_document() -> dict[str, Any]:
    return create_app().openapi()
