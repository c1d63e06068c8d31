"""Paimon's REST catalog protocol under /v1, beside the native API: same port, tables, locks and tokens.

Paimon's engines configured with `metastore=rest` (pypaimon, pypaimon-rust, Spark and Flink with
Paimon's connector) create databases and tables here, load snapshots and POST their finished snapshots
to `.../commit`, which the coordinator publishes under the table's lock. Modules: `config`,
`databases`, `tables`, `snapshots` (and rollback), `tags`, `commits`, `data_tokens`, `partitions` (mark
done), `views` (none: 404 and empty lists), and `fallback` (501 for the rest of the protocol); `errors`
renders Paimon's ErrorResponse, `params` checks path names.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends

from coordinator.api.auth import reader
from coordinator.api.rest_catalog import (
    commits,
    config,
    data_tokens,
    databases,
    fallback,
    partitions,
    snapshots,
    tables,
    tags,
    views,
)
from coordinator.api.rest_catalog.errors import PREFIX, responses
from coordinator.api.rest_catalog.params import known_prefix
from coordinator.errors import CatalogNotFound, Forbidden, Unauthenticated

router = APIRouter(
    prefix=PREFIX,
    tags=["paimon rest catalog"],
    # The native API's access control: with require_tokens a valid token for every request, else
    # anyone (Paimon's clients send some token anyway: `token.provider` is mandatory to them).
    dependencies=[Depends(reader)],
    responses=responses(Unauthenticated, Forbidden),
    # pypaimon POSTs its JSON bodies without a Content-Type.
    strict_content_type=False,
)
router.include_router(config.router)
for served in (
    databases.router,
    tables.router,
    snapshots.router,
    tags.router,
    commits.router,
    data_tokens.router,
    partitions.router,
    views.router,
):
    router.include_router(served, dependencies=[Depends(known_prefix)], responses=responses(CatalogNotFound))
router.include_router(fallback.router)
