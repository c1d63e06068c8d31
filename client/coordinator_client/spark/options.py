"""The options of the `paimon-coordinator` data source, read once on the driver into typed settings.

Spark hands a data source its options as strings (case-insensitive keys). Everything a job can get wrong
is checked here, before a task runs or a file is written, and named in the error: the option and why.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from coordinator_client.client import CoordinatorClient

URL_ENV = "COORDINATOR_URL"
TOKEN_ENV = "COORDINATOR_TOKEN"
DEFAULT_TIMEOUT_SECONDS = 120.0


class OptionError(ValueError):
    """An option of the data source is missing or malformed; nothing was read or written."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"option {option!r}: {message}")
        self.option = option


@dataclass(frozen=True)
class Connection:
    """Which table, and how to reach the coordinator that owns it: the options `table` (or the path of
    `load`/`save`), `url` and `token` (else COORDINATOR_URL and COORDINATOR_TOKEN of the Spark driver's
    environment) and `timeout` in seconds."""

    table: str
    url: str
    token: str | None
    timeout: float = DEFAULT_TIMEOUT_SECONDS

    @classmethod
    def of(cls, options: Mapping[str, str]) -> Connection:
        table = options.get("table") or options.get("path")
        if not table:
            raise OptionError("table", "name it: load('db.t'), save('db.t') or option('table', 'db.t')")
        url = options.get("url") or os.environ.get(URL_ENV)
        if not url:
            raise OptionError("url", f"give the coordinator's URL as option('url', ...) or set {URL_ENV}")
        token = options.get("token") or os.environ.get(TOKEN_ENV) or None
        timeout = positive_float(options, "timeout", DEFAULT_TIMEOUT_SECONDS)
        return cls(table, url, token, timeout)

    def client(self) -> CoordinatorClient:
        return CoordinatorClient(self.url, token=self.token, timeout=self.timeout)


def positive_float(options: Mapping[str, str], name: str, default: float) -> float:
    text = options.get(name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise OptionError(name, f"expected a number, got {text!r}") from None
    if not value > 0:
        raise OptionError(name, f"must be positive, got {text!r}")
    return value


def flag(options: Mapping[str, str], name: str) -> bool:
    text = options.get(name, "false").strip().lower()
    if text not in ("true", "false"):
        raise OptionError(name, f"expected true or false, got {text!r}")
    return text == "true"


def optional_int(options: Mapping[str, str], name: str, *, minimum: int | None = None) -> int | None:
    text = options.get(name)
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise OptionError(name, f"expected an integer, got {text!r}") from None
    if minimum is not None and value < minimum:
        raise OptionError(name, f"must be at least {minimum}, got {value}")
    return value


def partition_spec(options: Mapping[str, str], name: str) -> dict[str, str] | None:
    """A partition written as Paimon's procedures write it, `dt=2024-01-01,region=eu`: values as text,
    converted to the partition keys' types by the caller."""
    text = options.get(name)
    if text is None:
        return None
    spec: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise OptionError(name, f"expected key=value[,key=value...], got {text!r}")
        spec[key.strip()] = value.strip()
    return spec
