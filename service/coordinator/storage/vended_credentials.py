"""The object-store options a Paimon REST catalog client needs to reach one table's files itself.

Paimon's REST catalog hands clients their storage access (`data-token.enabled`, GET .../token): a client
configured with the coordinator's URI, warehouse name and bearer token only gets the store's endpoint
and credentials from the coordinator, under the option names pypaimon's FileIO reads (`fs.s3.*`).

What is vended depends on `COORDINATOR_DATA_TOKEN_MODE`:
- `sts` (the default): a session minted by the store's STS, limited by its session policy to the
  table's folder (read and write, or read only) and expiring after `data_token_seconds`
  (storage/session_credentials.py). A store without STS gets no credentials (501), never the key.
- `static`: the coordinator's own key, from where its store gets it (the warehouse URI's user info,
  else the standard AWS environment), which reaches all that key reaches; a reader gets the separately
  configured read-only pair. Chosen by the operator only: handing out the key silently is what `sts`
  exists to stop.
Only S3 is vended; on GCS and Azure clients bring their own credentials.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from coordinator.clock import Clock
from coordinator.errors import NotSupported
from coordinator.settings import Settings
from coordinator.storage.session_credentials import Access, TableSessions
from coordinator.storage.sigv4 import AwsKey
from coordinator.storage.store_uri import StoreUri

log = logging.getLogger(__name__)

ENDPOINT = "fs.s3.endpoint"
REGION = "fs.s3.region"
ACCESS_KEY = "fs.s3.accessKeyId"
SECRET_KEY = "fs.s3.accessKeySecret"
SESSION_TOKEN = "fs.s3.securityToken"
PATH_STYLE = "fs.s3.path-style-access"
DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class StoreAccess:
    """How the coordinator reaches an S3 warehouse: where (no secret) and with which key."""

    options: dict[str, str]
    """Endpoint, region and path style in `fs.s3.*` spelling."""
    endpoint: str | None
    """A custom endpoint's URL (SeaweedFS, MinIO, Ceph); None on AWS."""
    region: str | None
    key: AwsKey | None


@dataclass(frozen=True)
class Vended:
    options: dict[str, str]
    """Never log it: it holds a secret."""
    expires_at_millis: int


def s3_store_access(warehouse: str, environ: Mapping[str, str]) -> StoreAccess | None:
    """The store of `warehouse` (a URI as configured, with its options and credentials), or None when
    the warehouse is not on S3."""
    if "://" not in warehouse:
        return None
    store = StoreUri.parse(warehouse)
    if store.scheme != "s3":
        return None
    options: dict[str, str] = {}
    endpoint = _endpoint(store, environ)
    if endpoint:
        # Custom endpoints (SeaweedFS, MinIO, Ceph) answer path-style requests, as object_store.py
        # addresses them; AWS answers both.
        options.update({ENDPOINT: endpoint, PATH_STYLE: "true"})
    region = store.options.get("region") or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    if region:
        options[REGION] = region
    key = None
    if store.access_key and store.secret_key:
        key = AwsKey(store.access_key, store.secret_key)
    elif environ.get("AWS_ACCESS_KEY_ID") and environ.get("AWS_SECRET_ACCESS_KEY"):
        key = AwsKey(
            environ["AWS_ACCESS_KEY_ID"], environ["AWS_SECRET_ACCESS_KEY"], environ.get("AWS_SESSION_TOKEN")
        )
    return StoreAccess(options, endpoint, region, key)


def s3_client_options(warehouse: str, environ: Mapping[str, str]) -> dict[str, str] | None:
    """The `fs.s3.*` options of the store of `warehouse` with the coordinator's own key, or None when
    the warehouse is not on S3. Never log what this returns."""
    access = s3_store_access(warehouse, environ)
    return None if access is None else _with_key(access.options, access.key)


class DataTokens:
    """The credentials GET .../token vends, as the settings say; built once per service."""

    def __init__(self, settings: Settings, environ: Mapping[str, str], clock: Clock) -> None:
        self._settings = settings
        self._clock = clock
        self._store = s3_store_access(settings.warehouse, environ)
        self._sessions: TableSessions | None = None
        self._no_sessions: str | None = None
        if self._store is None:
            return
        if settings.data_token_mode == "static":
            log.warning(
                "data tokens: static mode vends the coordinator's own S3 key, which reaches everything "
                "that key reaches, to every token that may write a table"
            )
            return
        sts, self._no_sessions = _sts_endpoint(settings, self._store)
        if self._store.key is None:
            self._no_sessions = "the coordinator has no S3 key to sign STS AssumeRole with"
        if self._no_sessions is not None:
            log.warning(
                "data tokens: no table-scoped sessions (%s); GET .../token answers 501", self._no_sessions
            )
            return
        assert sts is not None
        assert self._store.key is not None
        self._sessions = TableSessions(
            sts,
            self._store.key,
            region=self._store.region or DEFAULT_REGION,
            seconds=settings.data_token_seconds,
            role_arn=settings.data_token_role_arn,
            clock=clock,
        )

    @property
    def serves_readers(self) -> bool:
        return self._settings.data_token_readers

    def vend(self, location: str, access: Access) -> Vended:
        """Credentials for `access` to the table at `location`.

        Raises:
            NotSupported: the warehouse is not on S3, or sessions cannot be had (no STS, no key).
            StorageUnavailable: the STS is unreachable, failing, or refused.
        """
        if self._store is None:
            raise NotSupported("the warehouse is not on S3: clients reach it with their own credentials")
        if self._settings.data_token_mode == "static":
            return self._static(access)
        if self._sessions is None:
            raise NotSupported(f"no table-scoped S3 session can be vended: {self._no_sessions}")
        store = StoreUri.parse(location)
        try:
            session = self._sessions.session(store.bucket, store.path, access)
        except ValueError as error:
            raise NotSupported(str(error)) from None
        key = AwsKey(session.access_key_id, session.secret_access_key, session.session_token)
        return Vended(_with_key(self._store.options, key), session.expires_at_millis)

    def close(self) -> None:
        if self._sessions is not None:
            self._sessions.close()

    def _static(self, access: Access) -> Vended:
        assert self._store is not None
        key = self._store.key
        if access == "read":
            secret = self._settings.reader_secret_access_key
            # Settings refuses readers in static mode without the pair.
            assert self._settings.reader_access_key_id is not None
            assert secret is not None
            key = AwsKey(self._settings.reader_access_key_id, secret.get_secret_value())
        expires = self._clock.millis() + self._settings.data_token_seconds * 1000
        return Vended(_with_key(self._store.options, key), expires)


def _with_key(options: dict[str, str], key: AwsKey | None) -> dict[str, str]:
    vended = dict(options)
    if key is not None:
        vended.update({ACCESS_KEY: key.access_key_id, SECRET_KEY: key.secret_access_key})
        if key.session_token:
            vended[SESSION_TOKEN] = key.session_token
    return vended


def _sts_endpoint(settings: Settings, store: StoreAccess) -> tuple[str | None, str | None]:
    """(the STS to ask, None) or (None, why there is none)."""
    if settings.data_token_sts_endpoint:
        return settings.data_token_sts_endpoint, None
    if store.endpoint:
        return store.endpoint, None
    if not settings.data_token_role_arn:
        # AWS's STS only assumes named roles; without one every call would fail the same way.
        return None, "on AWS, set COORDINATOR_DATA_TOKEN_ROLE_ARN to the role the sessions assume"
    return f"https://sts.{store.region or DEFAULT_REGION}.amazonaws.com", None


def _endpoint(store: StoreUri, environ: Mapping[str, str]) -> str | None:
    override = store.options.get("endpoint_override")
    if override:
        return override if "://" in override else f"{store.options.get('scheme', 'https')}://{override}"
    return environ.get("AWS_ENDPOINT_URL") or environ.get("AWS_ENDPOINT")
