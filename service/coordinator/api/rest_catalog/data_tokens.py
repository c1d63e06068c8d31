"""GET {T}/token: store credentials for a client that reads and writes the table's files itself
(storage/vended_credentials.py says what is vended in which mode).

Only a token that may write the table gets credentials that write: an admin, or a writer whose grant
covers it. Anyone else who may read it gets read-only ones if the operator turned that on
(`COORDINATOR_DATA_TOKEN_READERS`), else 403: the credentials reach the files themselves, past every
check the coordinator makes, so they go no further than the token's own rights.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends

from coordinator.api.auth import Caller
from coordinator.api.deps import ServicesDep
from coordinator.api.rest_catalog.errors import responses
from coordinator.api.rest_catalog.models import GetTableTokenResponse
from coordinator.api.rest_catalog.params import TablePath, table_reader
from coordinator.errors import Forbidden, NotSupported, StorageUnavailable, TableNotFound
from coordinator.storage.session_credentials import Access

# Every route names a table: one outside the token's grant is 403 before it is looked up.
router = APIRouter(
    prefix="/{prefix}/databases/{database}/tables/{table}", dependencies=[Depends(table_reader)]
)


@router.get("/token", responses=responses(Forbidden, TableNotFound, NotSupported, StorageUnavailable))
def table_token(table: TablePath, principal: Caller, services: ServicesDep) -> GetTableTokenResponse:
    """The `fs.s3.*` options pypaimon merges into its FileIO: endpoint, region, path style, access key,
    secret and session token. In `sts` mode (the default) a session limited to the table's folder that
    expires at `expiresAtMillis`; in `static` mode the configured key. 403 for a token that may not
    write the table (unless read-only credentials are served), 501 when the warehouse is not on S3 or
    the store has no STS, 503 when the STS is down or refuses."""
    access: Access = "write"
    if not principal.may_write(table.database, table.name):
        if not services.data_tokens.serves_readers:
            raise Forbidden(
                f"{principal.name} ({principal.role}) may not write to {table.id}, and store credentials "
                "are vended only to those who may"
            )
        access = "read"
    location = services.tables.get(table.id).location
    vended = services.data_tokens.vend(location, access)
    return GetTableTokenResponse(token=vended.options, expires_at_millis=vended.expires_at_millis)
