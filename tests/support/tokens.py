"""Bearer tokens on raw HTTP: the header a token goes in, and a client that sends one on every POST."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.paimon_files import Poster


def bearer(token: str) -> dict[str, str]:
    """The Authorization header that carries `token`."""
    return {"Authorization": f"Bearer {token}"}


class Authed:
    """A TestClient or an httpx.Client that sends one token on every POST (a Poster, e.g. for
    create_table)."""

    def __init__(self, client: Poster, token: str) -> None:
        self._client = client
        self._token = token

    def post(self, url: str, /, *, json: Any, headers: dict[str, str] | None = None) -> httpx.Response:
        return self._client.post(url, json=json, headers={**bearer(self._token), **(headers or {})})
