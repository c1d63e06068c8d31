"""Test support: REST snapshots a hostile writer of one table crafts to reach other tables' files.

The writer does what Paimon's REST protocol lets any writer do: it writes manifests and manifest lists
into its own table's `manifest/` folder, then POSTs a snapshot that names them. They are written with
the project's own encoders (format.manifest), as tests/rest_catalog/test_commits.py writes a Java-style
snapshot; each proposal builds on the table's real head, so only what it breaks can refuse it.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Sequence
from typing import Any

import httpx

from paimon_format.manifest import (
    ManifestEntry,
    ManifestFileMeta,
    decode_manifest,
    decode_manifest_list,
    encode_manifest,
    encode_manifest_list,
)
from paimon_format.manifest_meta import manifest_file_meta
from paimon_format.snapshot import Snapshot
from tests.support.paimon_files import read_bytes, read_text, write_bytes
from tests.support.rest_writers import CATALOG_NAME

AUTH = {"Authorization": "Bearer any-token"}

HOSTILE_USER = "hostile-writer"


@dataclasses.dataclass
class RestTable:
    """A table a REST writer commits to, seen the way that writer sees it: its folder and its head."""

    http: httpx.Client
    table_id: str
    location: str
    uuid: str

    @classmethod
    def of(cls, http: httpx.Client, table_id: str) -> RestTable:
        row = http.get(f"/tables/{table_id}").json()
        return cls(http, table_id, row["location"], row["uuid"])

    @property
    def commit_path(self) -> str:
        database, name = self.table_id.split(".")
        return f"/v1/{CATALOG_NAME}/databases/{database}/tables/{name}/commit"

    def latest_id(self) -> int:
        latest: int = self.http.get(f"/tables/{self.table_id}").json()["latestSnapshotId"]
        return latest

    def snapshot(self, snapshot_id: int | None = None) -> Snapshot:
        """A snapshot as its file on storage has it (the head by default)."""
        snapshot_id = self.latest_id() if snapshot_id is None else snapshot_id
        return Snapshot.from_json(read_text(f"{self.location}/snapshot/snapshot-{snapshot_id}"))

    def metas(self, list_name: str) -> list[ManifestFileMeta]:
        return decode_manifest_list(read_bytes(f"{self.location}/manifest/{list_name}"))

    def entries(self, meta: ManifestFileMeta) -> list[ManifestEntry]:
        return decode_manifest(read_bytes(f"{self.location}/manifest/{meta.file_name}"))

    def head_manifests(self) -> list[ManifestFileMeta]:
        """Every data manifest of the head: what a proposal's base list holds."""
        head = self.snapshot()
        return self.metas(head.base_manifest_list) + self.metas(head.delta_manifest_list)

    def head_entries(self) -> list[ManifestEntry]:
        """The entries of the head's delta manifests: real files of the table to craft entries from."""
        return [e for m in self.metas(self.snapshot().delta_manifest_list) for e in self.entries(m)]

    def write_file(self, name: str, data: bytes) -> str:
        """Write `data` as `manifest/<name>` of this table, as a REST writer writes its manifests."""
        write_bytes(f"{self.location}/manifest/{name}", data)
        return name

    def manifest(self, entries: Sequence[ManifestEntry], name: str) -> ManifestFileMeta:
        """Write `entries` as a manifest; its meta as a manifest list records it (counts, stats)."""
        data = encode_manifest(list(entries))
        self.write_file(name, data)
        stats = self.metas(self.snapshot().delta_manifest_list)[0].partition_stats
        return manifest_file_meta(name, len(data), list(entries), 0, stats)

    def manifest_list(self, metas: Sequence[ManifestFileMeta], name: str) -> str:
        return self.write_file(name, encode_manifest_list(list(metas)))

    def proposal(self, *, delta: str, base: str | None = None, **snapshot: Any) -> dict[str, Any]:
        """The POST body of a snapshot on top of the head naming the manifest lists `base` (by default
        one of the head's manifests, as pypaimon writes it) and `delta`; `snapshot` overrides keys."""
        head = self.snapshot()
        if base is None:
            base = self.manifest_list(self.head_manifests(), f"manifest-list-{uuid.uuid4()}-0")
        body = {
            **json.loads(head.to_json()),
            "id": head.id + 1,
            "uuid": str(uuid.uuid4()),
            "commitUser": HOSTILE_USER,
            "commitIdentifier": head.id + 1,
            "commitKind": "APPEND",
            "baseManifestList": base,
            "deltaManifestList": delta,
            **snapshot,
        }
        for key in ("baseManifestListSize", "deltaManifestListSize"):
            body.pop(key, None)
        return {"tableId": self.uuid, "baseSnapshotUuid": head.uuid, "snapshot": body, "statistics": []}

    def post(self, body: dict[str, Any]) -> httpx.Response:
        return self.http.post(self.commit_path, json=body, headers=AUTH)


def renamed(entry: ManifestEntry, file_name: str) -> ManifestEntry:
    """The entry with another data file name."""
    return dataclasses.replace(entry, file=dataclasses.replace(entry.file, file_name=file_name))
