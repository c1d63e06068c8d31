"""What no served /v1 route matched: 501 for an endpoint of Paimon's REST catalog protocol the
coordinator does not serve, 405 for a method the protocol does not define on a path it has, 404 for a
path it does not have; each in Paimon's ErrorResponse.

Included after every served route, so it only answers what none of them matched. The endpoints are
those of Paimon's spec (`docs/static/rest-catalog-open-api.yaml` in apache/paimon at 5dacde5, 56
operations), the newer `table-summaries`, and what the clients call beyond it: Java's `replace`, and
pypaimon 2.1.0's permissions. Paimon's clients read 501 as "not implemented" and fall back where they
can (partitions are listed from storage instead); a 501 is never the answer to a request no client of
the protocol could mean (`PUT /v1/config` is a 405).
"""

from __future__ import annotations

import re

from fastapi import APIRouter, Request

from coordinator.errors import MethodNotAllowed, NotSupported, RouteNotFound

router = APIRouter()

P = "{prefix}"
D = f"{P}/databases/{{database}}"
T = f"{D}/tables/{{table}}"
ENDPOINTS: dict[str, tuple[str, ...]] = {
    "config": ("GET",),
    f"{P}/databases": ("GET", "POST"),
    D: ("GET", "POST", "DELETE"),
    f"{D}/register": ("POST",),
    f"{D}/tables": ("GET", "POST"),
    f"{D}/table-details": ("GET",),
    f"{P}/table-summaries": ("GET",),
    f"{P}/tables": ("GET",),
    f"{P}/tables/id/{{tableId}}": ("GET",),
    f"{P}/tables/rename": ("POST",),
    T: ("GET", "POST", "DELETE"),
    f"{T}/commit": ("POST",),
    f"{T}/replace": ("POST",),
    f"{T}/rollback": ("POST",),
    f"{T}/rollback-schema": ("POST",),
    f"{T}/token": ("GET",),
    f"{T}/auth": ("POST",),
    f"{T}/snapshot": ("GET",),
    f"{T}/snapshots": ("GET",),
    f"{T}/snapshots/{{version}}": ("GET",),
    f"{T}/partitions": ("GET", "POST"),
    f"{T}/partitions/drop": ("POST",),
    f"{T}/partitions/mark": ("POST",),
    f"{T}/partitions/list-by-names": ("POST",),
    f"{T}/partitions/list-by-filter": ("POST",),
    f"{T}/branches": ("GET", "POST"),
    f"{T}/branches/{{branch}}": ("DELETE",),
    f"{T}/branches/{{branch}}/rename": ("POST",),
    f"{T}/branches/{{branch}}/forward": ("POST",),
    f"{T}/tags": ("GET", "POST"),
    f"{T}/tags/{{tag}}": ("GET", "DELETE"),
    f"{T}/consumers": ("GET",),
    f"{T}/consumers/reset": ("POST",),
    f"{D}/views": ("GET", "POST"),
    f"{D}/view-details": ("GET",),
    f"{P}/views": ("GET",),
    f"{D}/views/{{view}}": ("GET", "POST", "DELETE"),
    f"{P}/views/rename": ("POST",),
    f"{D}/functions": ("GET", "POST"),
    f"{D}/function-details": ("GET",),
    f"{P}/functions": ("GET",),
    f"{D}/functions/{{function}}": ("GET", "POST", "DELETE"),
    f"{P}/permissions": ("GET",),
    f"{P}/permissions/grant": ("POST",),
    f"{P}/permissions/revoke": ("POST",),
}
"""Every path of the protocol under /v1/, with the methods the protocol defines on it."""

_PATTERNS = [
    (re.compile("^" + re.sub(r"\\\{[A-Za-z]+\\\}", "[^/]+", re.escape(path)) + "$"), methods)
    for path, methods in ENDPOINTS.items()
]

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def protocol_methods(rest: str) -> tuple[str, ...] | None:
    """The methods Paimon's protocol defines on /v1/`rest`; None for a path it does not have."""
    for pattern, methods in _PATTERNS:
        if pattern.match(rest):
            return methods
    return None


@router.api_route("/{rest:path}", methods=METHODS, include_in_schema=False)
def not_served(request: Request) -> None:
    """Raises NotSupported (501), MethodNotAllowed (405) or RouteNotFound (404); never answers."""
    path = request.url.path
    # Read from the request, not declared: any path is this route's, there is nothing to validate.
    methods = protocol_methods(request.path_params["rest"])
    if methods is None:
        raise RouteNotFound(f"{path} is not a path of Paimon's REST catalog protocol")
    if request.method not in methods:
        allowed = sorted(methods)
        raise MethodNotAllowed(
            f"{request.method} is not allowed on {path}; allowed: {', '.join(allowed)}", allowed=allowed
        )
    raise NotSupported(f"{request.method} {path} is not served by the Paimon Commit Coordinator")
