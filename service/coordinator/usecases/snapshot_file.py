"""A committed snapshot with its JSON text, rendered once for both its database row and its file."""

from __future__ import annotations

from dataclasses import dataclass

from paimon_format.snapshot import Snapshot


@dataclass(frozen=True)
class SnapshotFile:
    """A committed snapshot and its JSON, rendered once for both its row and its file."""

    id: int
    body: str
    snapshot: Snapshot | None = None
    """The parsed snapshot when this process built or read it; recovery has only the text."""

    @classmethod
    def of(cls, snapshot: Snapshot) -> SnapshotFile:
        return cls(snapshot.id, snapshot.to_json(), snapshot)

    @classmethod
    def read(cls, body: str) -> SnapshotFile:
        """A snapshot as found on storage, kept byte for byte."""
        snapshot = Snapshot.from_json(body)
        return cls(snapshot.id, body, snapshot)

    def row(self, *, published: bool) -> dict[str, object]:
        snapshot = self.snapshot if self.snapshot is not None else Snapshot.from_json(self.body)
        return {
            "snapshot_id": snapshot.id,
            "commit_user": snapshot.commit_user,
            "commit_identifier": snapshot.commit_identifier,
            "commit_kind": snapshot.commit_kind.value,
            "time_millis": snapshot.time_millis,
            "body": self.body,
            "published": published,
        }
