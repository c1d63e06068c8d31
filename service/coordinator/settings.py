"""Service settings: one `COORDINATOR_` prefix, each also a flag of `coordinator serve`."""

from __future__ import annotations

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Where the metadata lives, where the tables live, and how the locks behave."""

    model_config = SettingsConfigDict(env_prefix="COORDINATOR_", extra="ignore")

    database_url: str = Field(default="sqlite:///./coordinator.db", description="SQLAlchemy URL")
    warehouse: str = Field(default="./warehouse", description="folder or pyarrow filesystem URI")
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    lock_lease_seconds: float = Field(default=30.0, gt=0, description="lease of a table lock")
    lock_acquire_timeout_seconds: float = Field(default=30.0, ge=0, description="then 503 + Retry-After")
    max_body_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    auto_migrate: bool = Field(default=True, description="run `alembic upgrade head` at start")

    @field_validator("database_url")
    @classmethod
    def _use_psycopg3(cls, url: str) -> str:
        # Plain postgres URLs would pick psycopg2, which we do not ship.
        for prefix in ("postgresql://", "postgres://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url[len(prefix) :]
        return url
