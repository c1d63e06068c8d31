"""The object-store options a Paimon REST catalog client needs to reach the warehouse itself.

Paimon's REST catalog hands clients their storage access (`data-token.enabled`, GET .../token): a client
configured with the coordinator's URI, warehouse name and bearer token only gets the store's endpoint
and credentials from the coordinator, under the option names pypaimon's FileIO reads (`fs.s3.*`).

They come from where the coordinator's own store gets them (storage/object_store.py): the warehouse
URI's options and user info first, then the standard AWS environment. The stores served here offer no
token service (SeaweedFS has no STS), so the credentials vended are the configured ones, not a
table-scoped session: anyone given them reaches the whole bucket. Only S3 is vended; on GCS and Azure
clients bring their own credentials.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.storage.store_uri import StoreUri

ENDPOINT = "fs.s3.endpoint"
REGION = "fs.s3.region"
ACCESS_KEY = "fs.s3.accessKeyId"
SECRET_KEY = "fs.s3.accessKeySecret"
SESSION_TOKEN = "fs.s3.securityToken"
PATH_STYLE = "fs.s3.path-style-access"


def s3_client_options(warehouse: str, environ: Mapping[str, str]) -> dict[str, str] | None:
    """The `fs.s3.*` options of the store of `warehouse` (a URI as configured, with its options and
    credentials), or None when the warehouse is not on S3. Never log what this returns."""
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
    if store.access_key and store.secret_key:
        options.update({ACCESS_KEY: store.access_key, SECRET_KEY: store.secret_key})
    elif environ.get("AWS_ACCESS_KEY_ID") and environ.get("AWS_SECRET_ACCESS_KEY"):
        options.update(
            {ACCESS_KEY: environ["AWS_ACCESS_KEY_ID"], SECRET_KEY: environ["AWS_SECRET_ACCESS_KEY"]}
        )
        if environ.get("AWS_SESSION_TOKEN"):
            options[SESSION_TOKEN] = environ["AWS_SESSION_TOKEN"]
    return options


def _endpoint(store: StoreUri, environ: Mapping[str, str]) -> str | None:
    override = store.options.get("endpoint_override")
    if override:
        return override if "://" in override else f"{store.options.get('scheme', 'https')}://{override}"
    return environ.get("AWS_ENDPOINT_URL") or environ.get("AWS_ENDPOINT")
