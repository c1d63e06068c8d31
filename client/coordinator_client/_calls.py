"""The base of every flow: a request sent until it is not a 503 or 429 (within the retry budget), its
answer parsed into a model, and the small helpers that build requests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from coordinator_client._retry_policy import did_nothing, unavailable_delay
from coordinator_client._steps import Flow, Pause, Send
from coordinator_client.errors import api_error

_M = TypeVar("_M", bound=BaseModel)


def route(*parts: str | int) -> str:
    """A path of the API from its segments, each quoted."""
    return "/" + "/".join(quote(str(part), safe="") for part in parts)


def page_params(
    limit: int | None, page_token: str | None, database: str | None, name_prefix: str | None
) -> dict[str, str | int]:
    """The table list's paging parameters that are set."""
    given = {"limit": limit, "page_token": page_token, "database": database, "name_prefix": name_prefix}
    return {k: v for k, v in given.items() if v is not None}


def json_body(model: BaseModel) -> bytes:
    return model.model_dump_json(by_alias=True).encode()


JSON_HEADERS = {"Content-Type": "application/json"}


def send_json(method: str, path: str, request: BaseModel) -> Send:
    return Send(method, path, body=json_body(request), headers=JSON_HEADERS)


def coerce(model: type[_M], value: _M | Mapping[str, Any]) -> _M:
    """The request model itself, or one validated from a dict (snake_case or camelCase keys)."""
    return value if isinstance(value, model) else model.model_validate(value)


class Calls:
    """Sending and parsing, with the 503/429 retry budget every call shares."""

    def __init__(self, max_unavailable_retries: int) -> None:
        if max_unavailable_retries < 0:
            raise ValueError("max_unavailable_retries must be >= 0")
        self.max_unavailable_retries = max_unavailable_retries

    def exchange(self, send: Send) -> Flow[httpx.Response]:
        """Send until the answer says the service did something (not a 503, 429 or LOCK_LOST), within the
        retry budget; return a 2xx or raise ApiError."""
        retries = 0
        while True:
            response = yield send
            assert response is not None
            if response.is_success:
                return response
            error = api_error(response)
            if not did_nothing(error) or retries >= self.max_unavailable_retries:
                raise error
            retries += 1
            yield Pause(unavailable_delay(error, retries))

    def call(self, send: Send, model: type[_M]) -> Flow[_M]:
        response = yield from self.exchange(send)
        return model.model_validate_json(response.content)
