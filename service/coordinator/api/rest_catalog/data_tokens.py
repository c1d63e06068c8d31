"""GET {T}/token: the store's endpoint and credentials for a client that reads and writes the table's
files itself (storage/vended_credentials.py says what is vended and why it is not table-scoped)."""

from __future__ import annotations

import os

from fastapi import APIRouter

from coordinator.api.deps import ServicesDep
from coordinator.api.rest_catalog.errors import responses
from coordinator.api.rest_catalog.models import GetTableTokenResponse
from coordinator.api.rest_catalog.params import TablePath
from coordinator.errors import NotSupported, TableNotFound
from coordinator.storage.vended_credentials import s3_client_options

router = APIRouter(prefix="/{prefix}/databases/{database}/tables/{table}")


@router.get("/token", responses=responses(TableNotFound, NotSupported))
def table_token(table: TablePath, services: ServicesDep) -> GetTableTokenResponse:
    """The `fs.s3.*` options pypaimon merges into its FileIO: endpoint, region, path style, access key,
    secret and session token. Every caller that may read the table gets them; they expire (for the
    client) `data_token_seconds` from now. 501 when the warehouse is not on S3."""
    services.tables.get(table.id)
    options = s3_client_options(services.settings.warehouse, os.environ)
    if options is None:
        raise NotSupported("the warehouse is not on S3: clients reach it with their own credentials")
    expires = services.clock.millis() + services.settings.data_token_seconds * 1000
    return GetTableTokenResponse(token=options, expires_at_millis=expires)
