"""Where each file of a Paimon table lives, relative to the table's root (paimon-format.md §1)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TableLayout:
    root: str

    @property
    def schema_dir(self) -> str:
        return f"{self.root}/schema"

    @property
    def snapshot_dir(self) -> str:
        return f"{self.root}/snapshot"

    @property
    def manifest_dir(self) -> str:
        return f"{self.root}/manifest"

    @property
    def tag_dir(self) -> str:
        return f"{self.root}/tag"

    @property
    def consumer_dir(self) -> str:
        return f"{self.root}/consumer"

    def tag(self, name: str) -> str:
        return f"{self.root}/tag/tag-{name}"

    def consumer(self, consumer_id: str) -> str:
        return f"{self.root}/consumer/consumer-{consumer_id}"

    def schema(self, schema_id: int) -> str:
        return f"{self.root}/schema/schema-{schema_id}"

    def snapshot(self, snapshot_id: int) -> str:
        return f"{self.root}/snapshot/snapshot-{snapshot_id}"

    def hint(self, name: str) -> str:
        return f"{self.root}/snapshot/{name}"

    def manifest(self, name: str) -> str:
        return f"{self.root}/manifest/{name}"

    def data_file(self, partition_dir: str, bucket_dir: str, file_name: str) -> str:
        prefix = f"{self.root}/{partition_dir}" if partition_dir else self.root
        return f"{prefix}/{bucket_dir}/{file_name}"
