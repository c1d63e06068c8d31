"""Single S3 requests signed with a given key, to ask the store itself what a credential may do: the
answer is the store's (200, or 403 with its error code), with no client library retrying or hiding it."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from urllib.parse import quote

import httpx

from coordinator.storage.sigv4 import AwsKey, signed_headers
from tests.support.seaweed import BUCKET, REGION


def s3_call(
    endpoint_url: str,
    method: str,
    key: AwsKey,
    path: str = "",
    body: bytes = b"",
    *,
    list_prefix: str | None = None,
) -> tuple[int, str]:
    """(status, the error document's Code or "") of `method` on `path` (a key of the bucket; "" is the
    bucket itself), or of a ListObjectsV2 of `list_prefix` when it is given."""
    url = f"{endpoint_url}/{BUCKET}/{path}" if path else f"{endpoint_url}/{BUCKET}"
    if list_prefix is not None:
        url += f"?list-type=2&prefix={quote(list_prefix, safe='')}"
    headers = signed_headers(
        method, url, {}, body, key, service="s3", region=REGION, now=datetime.now(timezone.utc)
    )
    response = httpx.request(method, url, content=body, headers=headers, timeout=10)
    code = re.search(r"<Code>([^<]+)</Code>", response.text)
    return response.status_code, code[1] if code else ""


def vended_key(options: dict[str, str]) -> AwsKey:
    """The key in a GET .../token answer's `fs.s3.*` options."""
    return AwsKey(
        options["fs.s3.accessKeyId"], options["fs.s3.accessKeySecret"], options.get("fs.s3.securityToken")
    )
