"""Service settings: one `COORDINATOR_` prefix, each also a flag of `coordinator serve`."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class WebhookTarget(BaseModel):
    """A webhook events are POSTed to (COORDINATOR_EVENTS_WEBHOOKS)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,100}$", description="its publisher name is webhook-<name>")
    url: str = Field(pattern=r"^https?://[^\s]+$", max_length=500)
    secret: SecretStr = Field(min_length=1, description="the HMAC-SHA256 key of the signature header")


class Settings(BaseSettings):
    """Where the metadata lives, where the tables live, and how the locks behave."""

    model_config = SettingsConfigDict(env_prefix="COORDINATOR_", extra="ignore")

    # Both may carry credentials: kept out of the settings' repr (logs print settings, never secrets).
    database_url: str = Field(default="sqlite:///./coordinator.db", description="SQLAlchemy URL", repr=False)
    warehouse: str = Field(default="./warehouse", description="folder or filesystem URI", repr=False)
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    workers: int = Field(
        default=1,
        ge=1,
        le=64,
        description="processes serving (host, port) together, each a replica of its own on the one "
        "database (a commit to a table another worker holds is forwarded to it); more than 1 needs "
        "PostgreSQL",
    )
    lock_lease_seconds: float = Field(default=30.0, gt=0, description="lease of a table lock")
    lock_acquire_timeout_seconds: float = Field(default=30.0, ge=0, description="then 503 + Retry-After")
    commit_queue_max_wait_seconds: float | None = Field(
        default=None,
        gt=0,
        description="a commit is refused with 429 and Retry-After when the commits waiting in this process "
        "(on its table, or over every table) would take longer than this to answer; default: the lock "
        "lease (lock_lease_seconds, or hive_lock_timeout_seconds with Hive locks)",
    )
    max_body_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    transaction_max_tables: int = Field(
        default=64, ge=1, description="tables one multi-table transaction may change (POST /transactions)"
    )
    commit_batch_tables: int = Field(
        default=32, ge=1, description="tables whose commits one batch records together (one commit point)"
    )
    commit_batches_at_once: int = Field(
        default=2, ge=1, description="batches of tables one process commits at the same time"
    )
    database_statement_timeout_seconds: float = Field(
        default=60.0,
        ge=0,
        description="PostgreSQL cancels any statement of the service that runs longer (a lock another "
        "session holds, a runaway plan); the request is answered 503 with Retry-After and its transaction "
        "changed nothing, instead of holding a commit thread and a connection indefinitely (0: no limit)",
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
    data_token_mode: Literal["sts", "static"] = Field(
        default="sts",
        description="what GET /v1/.../token vends on S3: `sts`, a session of the table's folder minted by "
        "the store's STS (AssumeRole with a session policy; 501/503 when the store has none), or `static`, "
        "the coordinator's own key, which reaches everything that key reaches (the whole bucket)",
    )
    data_token_seconds: int = Field(
        default=7200,
        ge=60,
        le=86400,
        description="sts: how long a session lasts (clamped to STS's 900..43200); static: how long the key "
        "is announced to last. pypaimon fetches a new credential when less than an hour is left, so under "
        "an hour it asks before every file operation",
    )
    data_token_sts_endpoint: str | None = Field(
        default=None,
        pattern=r"^https?://[^\s/?#]+/?$",
        description="the STS to mint sessions from; default the S3 endpoint (SeaweedFS and MinIO serve "
        "STS there), or https://sts.<region>.amazonaws.com on AWS",
    )
    data_token_role_arn: str | None = Field(
        default=None,
        max_length=2048,
        description="the role sessions assume (AWS needs one; SeaweedFS without it cuts the coordinator's "
        "own identity down to the session policy)",
    )
    data_token_readers: bool = Field(
        default=False,
        description="tokens that may only read a table get read-only credentials of it (sts: a read-only "
        "session; static: the reader key pair); otherwise only those that may write it get any (403)",
    )
    reader_access_key_id: str | None = Field(
        default=None, repr=False, description="static mode: a read-only key pair vended to readers"
    )
    reader_secret_access_key: SecretStr | None = Field(default=None, repr=False)
    advertise_url: str | None = Field(
        default=None,
        pattern=r"^https?://[^\s/?#]+(/[^\s?#]*)?$",
        max_length=300,
        description="where the other replicas reach this one (http://host:port); with it set, a replica "
        "that finds a table's lock held by another forwards the commit to that one, so commits to a table "
        "share one holder's group commit instead of taking the lock in turns",
    )
    events_retention_seconds: float = Field(
        default=7 * 86400,
        gt=0,
        description="how long the commit event feed (GET /events) keeps an event; a consumer resuming from "
        "an older cursor gets 410 with the oldest cursor still kept",
    )
    events_poll_seconds: float = Field(
        default=0.1,
        gt=0,
        le=5,
        description="how often a waiting GET /events or /events/stream looks for new events (another "
        "replica's commits show up no later than this)",
    )
    events_nats_url: str | None = Field(
        default=None,
        pattern=r"^(nats|tls)://[^\s]+$",
        max_length=500,
        description="publish every event to NATS JetStream at this server (nats://host:4222; a comma "
        "separates several of a cluster); unset: no NATS publisher",
    )
    events_nats_stream: str = Field(
        default="COORDINATOR_EVENTS",
        pattern=r"^[A-Za-z0-9_-]{1,64}$",
        description="the JetStream stream the events go to; created (on the subjects `<subject>.>`) "
        "if missing",
    )
    events_nats_subject: str = Field(
        default="coordinator.events",
        pattern=r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$",
        max_length=200,
        description="subject prefix: an event of table db.t goes to `<prefix>.db.t`",
    )
    events_nats_duplicate_window_seconds: float = Field(
        default=120.0,
        gt=0,
        description="the duplicate window of a stream the coordinator creates: a resend of an event id "
        "within it is dropped by JetStream; keep it well above events_publisher_lease_seconds",
    )
    events_webhooks: list[WebhookTarget] = Field(
        default_factory=list,
        description='webhooks every event is POSTed to, as JSON: [{"name": "audit", "url": '
        '"https://...", "secret": "..."}]; each signed with HMAC-SHA256 of the body under its secret',
    )
    events_webhook_max_attempts: int = Field(
        default=8, ge=1, le=100, description="a webhook delivery failing this often goes to the dead letters"
    )
    events_webhook_timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    events_publisher_backoff_seconds: float = Field(
        default=0.5, gt=0, description="the first wait after a failed delivery; doubled after each failure"
    )
    events_publisher_max_backoff_seconds: float = Field(
        default=30.0, gt=0, description="the longest wait between two delivery attempts"
    )
    events_publisher_lease_seconds: float = Field(
        default=10.0,
        gt=0,
        description="one replica publishes at a time, under a lease on the database clock; another takes "
        "over this long after the publishing one died",
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

    @field_validator("events_webhooks")
    @classmethod
    def _webhook_names_unique(cls, hooks: list[WebhookTarget]) -> list[WebhookTarget]:
        names = [h.name for h in hooks]
        if len(names) != len(set(names)):
            raise ValueError("events_webhooks: each webhook needs a name of its own")
        return hooks

    @model_validator(mode="after")
    def _hive_needs_a_uri(self) -> Settings:
        if self.lock_backend == "hive" and not self.hive_metastore_uri:
            raise ValueError("lock_backend hive needs hive_metastore_uri (thrift://host:9083)")
        return self

    @model_validator(mode="after")
    def _reader_keys_come_in_pairs(self) -> Settings:
        if (self.reader_access_key_id is None) != (self.reader_secret_access_key is None):
            raise ValueError("reader_access_key_id and reader_secret_access_key go together")
        if self.data_token_readers and self.data_token_mode == "static" and self.reader_access_key_id is None:
            raise ValueError(
                "data_token_readers in static mode vends the reader key pair: set reader_access_key_id "
                "and reader_secret_access_key (a key that may only read)"
            )
        return self

    def unprotected_bind_refused(self) -> str | None:
        """Why serving as configured would expose the API without access control, or None if it would not."""
        if self.require_tokens or self.allow_open_bind or _is_loopback(self.host):
            return None
        return (
            f"refusing to serve on {self.host} without access control: set COORDINATOR_REQUIRE_TOKENS=true "
            "(and create tokens with `coordinator tokens create`), or COORDINATOR_ALLOW_OPEN_BIND=true"
        )

    def workers_refused(self) -> str | None:
        """Why serving with this many workers cannot work, or None if it can."""
        if self.workers > 1 and self.database_url.startswith("sqlite"):
            return (
                f"refusing to serve with workers={self.workers} on SQLite: SQLite serialises writers across "
                "processes, so more workers would only wait on each other; set COORDINATOR_WORKERS=1 "
                "(--workers 1) or use PostgreSQL (COORDINATOR_DATABASE_URL=postgresql://...)"
            )
        return None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything
