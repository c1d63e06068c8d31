"""Service settings: one `COORDINATOR_` prefix, each also a flag of `coordinator serve`."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Where the metadata lives, where the tables live, and how the locks behave."""

    model_config = SettingsConfigDict(env_prefix="COORDINATOR_", extra="ignore")

    # Both may carry credentials: kept out of the settings' repr (logs print settings, never secrets).
    database_url: str = Field(default="sqlite:///./coordinator.db", description="SQLAlchemy URL", repr=False)
    warehouse: str = Field(default="./warehouse", description="folder or filesystem URI", repr=False)
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    lock_lease_seconds: float = Field(default=30.0, gt=0, description="lease of a table lock")
    lock_acquire_timeout_seconds: float = Field(default=30.0, ge=0, description="then 503 + Retry-After")
    max_body_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    transaction_max_tables: int = Field(
        default=64, ge=1, description="tables one multi-table transaction may change (POST /transactions)"
    )
    auto_migrate: bool = Field(default=True, description="run `alembic upgrade head` at start")
    require_tokens: bool = Field(default=False, description="every request needs a bearer token")
    allow_open_bind: bool = Field(
        default=False, description="serve without tokens on an address other than loopback"
    )
    overwrite_check_seconds: float = Field(
        default=30.0,
        ge=0,
        description="how often the heads of recently committed tables are compared with storage, to take "
        "back a snapshot an outside writer overwrote (0: only at the next commit)",
    )
    catalog_name: str = Field(
        default="paimon",
        pattern=r"^[A-Za-z0-9_-]{1,128}$",
        description="the warehouse name Paimon's REST catalog clients pass (`warehouse`), and their prefix",
    )
    data_token_seconds: int = Field(
        default=7200,
        ge=60,
        le=86400,
        description="how long a storage credential vended to a REST catalog client is announced to last "
        "(pypaimon fetches a new one when less than an hour is left)",
    )
    advertise_url: str | None = Field(
        default=None,
        pattern=r"^https?://[^\s/?#]+(/[^\s?#]*)?$",
        max_length=300,
        description="where the other replicas reach this one (http://host:port); with it set, a replica "
        "that finds a table's lock held by another forwards the commit to that one, so commits to a table "
        "share one holder's group commit instead of taking the lock in turns",
    )
    log_format: Literal["json", "text"] = "json"
    lock_backend: Literal["table", "hive"] = Field(
        default="table", description="the lock table in the metadata database, or Hive Metastore locks"
    )
    hive_metastore_uri: str | None = Field(default=None, description="thrift://host:9083")
    hive_lock_timeout_seconds: float = Field(
        default=300.0, gt=0, description="the metastore's hive.txn.timeout: a lock not heartbeated expires"
    )

    @field_validator("database_url")
    @classmethod
    def _use_psycopg3(cls, url: str) -> str:
        # Plain postgres URLs would pick psycopg2, which we do not ship.
        for prefix in ("postgresql://", "postgres://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url[len(prefix) :]
        return url

    @field_validator("advertise_url")
    @classmethod
    def _without_trailing_slash(cls, url: str | None) -> str | None:
        return url.rstrip("/") if url else url

    @model_validator(mode="after")
    def _hive_needs_a_uri(self) -> Settings:
        if self.lock_backend == "hive" and not self.hive_metastore_uri:
            raise ValueError("lock_backend hive needs hive_metastore_uri (thrift://host:9083)")
        return self

    def unprotected_bind_refused(self) -> str | None:
        """Why serving as configured would expose the API without access control, or None if it would not."""
        if self.require_tokens or self.allow_open_bind or _is_loopback(self.host):
            return None
        return (
            f"refusing to serve on {self.host} without access control: set COORDINATOR_REQUIRE_TOKENS=true "
            "(and create tokens with `coordinator tokens create`), or COORDINATOR_ALLOW_OPEN_BIND=true"
        )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything
