"""The steps a flow yields (`Send`, `Pause`) and what a driver needs to perform them: the request
headers every call carries and the httpx request a `Send` becomes. See `_flows` for how they are used."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import TypeVar

import httpx

USER_AGENT = "paimon-coordinator-client/0.1.0"
USER_HEADER = "X-Coordinator-User"
"""Who asks: the service records it as the commitUser of the maintenance actions in the history."""

_T = TypeVar("_T")


@dataclass(frozen=True)
class Send:
    """One HTTP request for the driver to send; the driver replies with the httpx.Response."""

    method: str
    path: str
    params: Mapping[str, str | int] | None = None
    body: bytes | None = None
    headers: Mapping[str, str] | None = None
    stream: bool = False
    """Hand back a 2xx answer unread, its body to be streamed (an error answer is read all the same)."""


@dataclass(frozen=True)
class Pause:
    """Wait this long; the driver replies with None."""

    seconds: float


Step = Send | Pause
Flow = Generator[Step, httpx.Response | None, _T]


def request_headers(user: str | None, token: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    """The headers of every request. With a token the service knows who asks; without one (a service
    running without access control) `user` names who asks, and maintenance records it."""
    own = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if user is not None:
        own[USER_HEADER] = user
    if token is not None:
        own["Authorization"] = f"Bearer {token}"
    return {**own, **(extra or {})}


def build_request(http: httpx.Client | httpx.AsyncClient, send: Send) -> httpx.Request:
    params = {k: str(v) for k, v in send.params.items()} if send.params else None
    return http.build_request(send.method, send.path, params=params, content=send.body, headers=send.headers)
