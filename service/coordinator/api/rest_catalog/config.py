"""GET /v1/config: what a Paimon REST catalog client asks once, when it is created."""

from __future__ import annotations

import os
from typing import Annotated
from urllib.parse import unquote_plus

from fastapi import APIRouter, Query

from coordinator.api.deps import ServicesDep
from coordinator.api.rest_catalog.errors import responses
from coordinator.api.rest_catalog.models import ConfigResponse
from coordinator.errors import CatalogNotFound
from coordinator.storage.vended_credentials import s3_client_options
from coordinator_client.models import PRINTABLE_PATTERN

router = APIRouter()

Warehouse = Annotated[str | None, Query(max_length=1024, pattern=PRINTABLE_PATTERN)]
DECODINGS = 4
"""pypaimon 2.1.0 encodes the warehouse twice (`my%2520wh`); more than this many layers is no client's."""


@router.get("/config", responses=responses(CatalogNotFound))
def config(
    services: ServicesDep,
    warehouse: Annotated[str | None, Query(max_length=1024, pattern=PRINTABLE_PATTERN)] = None,
) -> ConfigResponse:
    """The catalog's prefix, and `data-token.enabled` when the warehouse is on S3 (clients
    then ask GET .../token for the store's endpoint and credentials). `warehouse` is the coordinator's
    catalog name (`COORDINATOR_CATALOG_NAME`); absent, this catalog."""
    name = services.settings.catalog_name
    if warehouse is not None and _decoded(warehouse) != name:
        raise CatalogNotFound(f"no warehouse {_decoded(warehouse)!r} here; this coordinator serves {name!r}")
    on_s3 = s3_client_options(services.settings.warehouse, os.environ) is not None
    overrides = {"data-token.enabled": "true"} if on_s3 else {}
    return ConfigResponse(defaults={"prefix": name}, overrides=overrides)


def _decoded(value: str) -> str:
    """`value` URL-decoded until it no longer changes (at most DECODINGS times)."""
    for _ in range(DECODINGS):
        decoded = unquote_plus(value)
        if decoded == value:
            break
        value = decoded
    return value
