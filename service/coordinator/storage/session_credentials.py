"""Short-lived S3 sessions limited to one table's folder, minted by STS AssumeRole with a session policy.

SeaweedFS (and MinIO) serve STS on their S3 port: an AssumeRole signed with the coordinator's key, with
no RoleArn, returns a session of the coordinator's own identity cut down to the inline `Policy`. AWS is
the same call with the RoleArn of a role the coordinator's key may assume. Without a Policy the session
would have everything the coordinator has, so `table_policy` refuses to scope to an empty or wildcard
folder and a policy is always sent. Sessions are stateless tokens: they cannot be revoked, only expire.

Sessions are cached per (bucket, folder, access) and handed to every caller of that kind until they run
low, so the token route does not mint on every call (pypaimon asks once per hour per table and client).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Literal
from urllib.parse import urlencode

import httpx

from coordinator.clock import Clock
from coordinator.errors import NotSupported, StorageUnavailable
from coordinator.storage.sigv4 import AwsKey, signed_headers

log = logging.getLogger(__name__)

Access = Literal["read", "write"]

MIN_SECONDS, MAX_SECONDS = 900, 43200
"""AssumeRole's bounds for DurationSeconds (AWS's maximum is the role's, at most 12 hours)."""
CLIENT_REFRESH_SECONDS = 3600
"""pypaimon (RESTApi.TOKEN_EXPIRATION_SAFE_TIME_MILLIS) and Paimon's Java client fetch a new credential
when less than an hour is left; one handed out with less is fetched again before each file operation."""
CLOCK_SKEW_SECONDS = 300
TIMEOUT_SECONDS = 10.0
_SESSION_NAME_CHARS = re.compile(r"[^\w+=,.@-]")


@dataclass(frozen=True)
class Session:
    """Temporary credentials and when the store stops taking them."""

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str = field(repr=False)
    expires_at_millis: int


def clamp_seconds(seconds: int) -> int:
    return min(max(seconds, MIN_SECONDS), MAX_SECONDS)


def table_policy(bucket: str, prefix: str, access: Access) -> str:
    """The session policy of one table folder `prefix` (a key prefix, no slashes at the ends) in
    `bucket`: its objects (read, or read, write and delete), listings under it only, HeadBucket, and for
    writers the folder markers of its ancestors, which pypaimon's mkdirs writes (empty objects).

    Raises:
        ValueError: an empty folder or a wildcard, which would reach more than the table.
    """
    prefix = prefix.strip("/")
    if not bucket or not prefix or any(c in bucket + prefix for c in "*?$"):
        raise ValueError(f"refusing to scope a session to s3://{bucket}/{prefix}")
    objects = ["s3:GetObject"]
    if access == "write":
        objects += ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]
    statements: list[dict[str, object]] = [
        {"Effect": "Allow", "Action": objects, "Resource": [f"arn:aws:s3:::{bucket}/{prefix}/*"]},
        # pyarrow's get_file_info of the folder itself HEADs its key first.
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{bucket}/{prefix}"]},
        # The listed prefix must end in "/": "wh/a.db/t1" alone would also list wh/a.db/t10/.
        {
            "Effect": "Allow",
            "Action": ["s3:ListBucket"],
            "Resource": [f"arn:aws:s3:::{bucket}"],
            "Condition": {"StringLike": {"s3:prefix": [f"{prefix}/", f"{prefix}/*"]}},
        },
        # HeadBucket is a ListBucket without any s3:prefix; every listing has one ("" at the root).
        {
            "Effect": "Allow",
            "Action": ["s3:ListBucket"],
            "Resource": [f"arn:aws:s3:::{bucket}"],
            "Condition": {"Null": {"s3:prefix": "true"}},
        },
    ]
    parts = prefix.split("/")
    markers = [f"arn:aws:s3:::{bucket}/{'/'.join(parts[:i])}/" for i in range(1, len(parts))]
    if access == "write" and markers:
        statements.append({"Effect": "Allow", "Action": ["s3:PutObject"], "Resource": markers})
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, separators=(",", ":"))


class TableSessions:
    """Mints and caches table-scoped sessions from one STS endpoint with the coordinator's key."""

    def __init__(
        self,
        endpoint: str,
        key: AwsKey,
        *,
        region: str,
        seconds: int,
        role_arn: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._endpoint = endpoint.rstrip("/") + "/"
        self._key = key
        self._region = region
        self._seconds = clamp_seconds(seconds)
        self._role_arn = role_arn
        self._clock = clock or Clock()
        self._client = httpx.Client(timeout=TIMEOUT_SECONDS)
        self._renew_below_ms = int(renew_below(self._seconds) * 1000)
        self._cache: dict[tuple[str, str, Access], Session] = {}
        self._locks: dict[tuple[str, str, Access], threading.Lock] = {}
        self._guard = threading.Lock()

    @property
    def seconds(self) -> int:
        return self._seconds

    def session(self, bucket: str, prefix: str, access: Access) -> Session:
        """A session for `access` to s3://bucket/prefix/, from the cache while it has enough time left.

        Raises:
            ValueError: an empty or wildcard folder (see table_policy).
            NotSupported: the endpoint serves no STS.
            StorageUnavailable: the STS is unreachable, failing, or refused the call.
        """
        policy = table_policy(bucket, prefix, access)
        slot = (bucket, prefix.strip("/"), access)
        with self._guard:
            lock = self._locks.setdefault(slot, threading.Lock())
        # One mint per slot at a time: callers arriving meanwhile take the new session.
        with lock:
            with self._guard:
                cached = self._cache.get(slot)
            if cached is not None and cached.expires_at_millis - self._clock.millis() > self._renew_below_ms:
                return cached
            minted = self._assume_role(policy, _session_name(access, bucket, slot[1]))
            with self._guard:
                now = self._clock.millis()
                for old in [s for s, v in self._cache.items() if v.expires_at_millis <= now]:
                    del self._cache[old]
                self._cache[slot] = minted
            return minted

    def close(self) -> None:
        self._client.close()

    def _assume_role(self, policy: str, name: str) -> Session:
        params = {
            "Action": "AssumeRole",
            "Version": "2011-06-15",
            "RoleSessionName": name,
            "DurationSeconds": str(self._seconds),
            "Policy": policy,
        }
        if self._role_arn:
            params["RoleArn"] = self._role_arn
        body = urlencode(params).encode()
        headers = signed_headers(
            "POST",
            self._endpoint,
            {"content-type": "application/x-www-form-urlencoded"},
            body,
            self._key,
            service="sts",
            region=self._region,
            # The store checks the signature's time against its own: the real time, whatever the
            # service's clock says.
            now=datetime.now(timezone.utc),
        )
        try:
            response = self._client.post(self._endpoint, content=body, headers=headers)
        except httpx.TransportError as error:
            raise StorageUnavailable(
                f"the store's STS at {self._endpoint} is unreachable: {type(error).__name__}",
                retry_after_seconds=5,
            ) from None
        return self._answer(response)

    def _answer(self, response: httpx.Response) -> Session:
        """The session in a 200, else the error it stands for; the body is never logged whole (a 200
        holds the secret)."""
        root = _xml(response.content)
        if response.status_code == 200:
            values = {name: _text(root, name) or "" for name in _CREDENTIALS}
            expires = _millis(values["Expiration"])
            if all(values.values()) and expires is not None:
                return Session(
                    access_key_id=values["AccessKeyId"],
                    secret_access_key=values["SecretAccessKey"],
                    session_token=values["SessionToken"],
                    expires_at_millis=expires,
                )
            raise NotSupported(f"{self._endpoint} answered AssumeRole without credentials: it serves no STS")
        status = response.status_code
        code, message = _text(root, "Code") or "", (_text(root, "Message") or "")[:300]
        if status in _NOT_SERVED_STATUSES or code in _NOT_SERVED_CODES:
            raise NotSupported(
                f"{self._endpoint} serves no STS (AssumeRole answered HTTP {status} {code}); "
                "COORDINATOR_DATA_TOKEN_MODE=static vends the configured key instead, which reaches the "
                "whole bucket"
            )
        if status >= 500:
            raise StorageUnavailable(
                f"the store's STS failed: HTTP {status} {code} {message}".rstrip(), retry_after_seconds=5
            )
        # The STS is there and refused: a policy it cannot take, a key it does not know, a clock too far
        # off, a role this key may not assume. The operator's to fix; the message says which.
        log.warning("STS refused AssumeRole: HTTP %s %s %s", status, code, message)
        raise StorageUnavailable(
            f"the store's STS refused AssumeRole: HTTP {status} {code}: {message}".rstrip(": "),
            retry_after_seconds=60,
        )


_CREDENTIALS = ("AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration")
_NOT_SERVED_STATUSES = frozenset({404, 405, 501})
_NOT_SERVED_CODES = frozenset({"NotImplemented", "InvalidAction", "MethodNotAllowed", "UnknownOperation"})
"""What a server without STS answers a form POST on its root: no such route, method or action."""


def renew_below(seconds: int) -> float:
    """Hand out a cached session only while it has more than this left: over an hour (and a margin for
    clocks) where the duration allows, so a client keeps what it gets; half its life otherwise."""
    floor = CLIENT_REFRESH_SECONDS + CLOCK_SKEW_SECONDS
    return max(floor, seconds / 2) if seconds > floor else seconds / 2


def _session_name(access: Access, bucket: str, prefix: str) -> str:
    """What the store's logs name the session by (`RoleSessionName`: 2-64 of [\\w+=,.@-])."""
    return _SESSION_NAME_CHARS.sub("-", f"pcc-{access}-{bucket}.{prefix.replace('/', '.')}")[-64:]


def _xml(content: bytes) -> ElementTree.Element | None:
    try:
        return ElementTree.fromstring(content)
    except ElementTree.ParseError:
        return None


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _text(root: ElementTree.Element | None, name: str) -> str | None:
    """The text of the first element named `name` in any namespace (STS answers in its own)."""
    if root is None:
        return None
    for element in root.iter():
        if _local(element.tag) == name:
            return (element.text or "").strip()
    return None


def _millis(expiration: str) -> int | None:
    """STS's Expiration (ISO 8601, `2026-01-01T00:00:00Z`) as epoch millis, None if unreadable.
    Fractions of a second are dropped (Python 3.10's fromisoformat takes only 3 or 6 digits), which
    errs early."""
    match = _EXPIRATION.match(expiration)
    if match is None:
        return None
    zone = match[2] if match[2] not in (None, "Z") else "+00:00"
    return int(datetime.fromisoformat(match[1] + zone).timestamp() * 1000)


_EXPIRATION = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?(Z|[+-]\d\d:\d\d)?$")
