"""501 for every path of Paimon's REST catalog protocol the coordinator does not serve.

Included after every served route, so it only answers what none of them matched: views, functions,
partitions, branches, consumers, table details and global listings, rename, register, replace,
rollback-schema and query auth. Paimon's clients read 501 as "not implemented" and fall back where they
can (partitions are listed from storage instead).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from coordinator.api.rest_catalog.errors import render

router = APIRouter()

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


@router.api_route("/{rest:path}", methods=METHODS, include_in_schema=False)
def not_served(request: Request) -> JSONResponse:
    return render(501, f"{request.method} {request.url.path} is not served by the Paimon Commit Coordinator")
