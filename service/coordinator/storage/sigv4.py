"""AWS Signature Version 4, for the one kind of request the coordinator signs itself: STS AssumeRole.

pyarrow and obstore sign their own S3 requests but cannot mint a session, and botocore is not a
dependency worth taking for one form POST; this is the signing algorithm as AWS documents it, checked
against AWS's published test vectors (tests/test_sigv4.py).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import parse_qsl, quote, urlsplit

ALGORITHM = "AWS4-HMAC-SHA256"


@dataclass(frozen=True)
class AwsKey:
    """An access key, with the session token of a temporary one. Never log the secret or the token."""

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)


def signed_headers(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    key: AwsKey,
    *,
    service: str,
    region: str,
    now: datetime,
) -> dict[str, str]:
    """`headers` (names lowercased) plus `host`, `x-amz-date`, the session token's header, S3's
    `x-amz-content-sha256`, and `authorization`: every header given is signed. `url`'s path is taken
    unencoded (each byte outside the unreserved set is percent-encoded once, as S3 wants and as any
    path of unreserved characters is for every service); `now` must be UTC."""
    parts = urlsplit(url)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    payload_hash = hashlib.sha256(body).hexdigest()
    signing = {name.lower(): value for name, value in headers.items()}
    signing["host"] = parts.netloc
    signing["x-amz-date"] = amz_date
    if key.session_token:
        signing["x-amz-security-token"] = key.session_token
    if service == "s3":
        # S3 refuses a request without it; other services take the hash from the body.
        signing["x-amz-content-sha256"] = payload_hash
    names = sorted(signing)
    canonical = "\n".join(
        [
            method.upper(),
            quote(parts.path or "/", safe="/-_.~"),
            _canonical_query(parts.query),
            "".join(f"{name}:{' '.join(signing[name].split())}\n" for name in names),
            ";".join(names),
            payload_hash,
        ]
    )
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    signature = hmac.new(
        _signing_key(key.secret_access_key, amz_date[:8], region, service), to_sign.encode(), hashlib.sha256
    ).hexdigest()
    signing["authorization"] = (
        f"{ALGORITHM} Credential={key.access_key_id}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return signing


def _canonical_query(query: str) -> str:
    pairs = [
        (quote(name, safe="-_.~"), quote(value, safe="-_.~"))
        for name, value in parse_qsl(query, keep_blank_values=True)
    ]
    return "&".join(f"{name}={value}" for name, value in sorted(pairs))


def _signing_key(secret: str, day: str, region: str, service: str) -> bytes:
    key = f"AWS4{secret}".encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key
