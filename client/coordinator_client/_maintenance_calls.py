"""The blocking client's table maintenance calls: options, ALTER TABLE, expiration, tags, rollback,
consumers and orphans. A part of CoordinatorClient (client.py) of its own, so each module reads as one
kind of work; every call is one flow of coordinator_client._flows run by the client."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from coordinator_client._flows import Api
from coordinator_client._steps import Flow
from coordinator_client.models import (
    CleanOrphansResponse,
    ConsumerListResponse,
    ConsumerModel,
    DeleteTagResponse,
    ExpireResponse,
    RollbackResponse,
    SchemaChange,
    TableResponse,
    TagListResponse,
    TagModel,
)

_T = TypeVar("_T")


class MaintenanceCalls:
    """Mixed into CoordinatorClient, which supplies the Api and runs its flows."""

    _api: Api

    def _run(self, flow: Flow[_T]) -> _T:
        raise NotImplementedError

    def set_options(
        self, table_id: str, set: Mapping[str, str] | None = None, remove: Sequence[str] | None = None
    ) -> TableResponse:
        """Set and remove table options (e.g. snapshot.num-retained.max) as the next schema version.

        BadRequest when an option cannot change on an existing table (bucket, primary-key...) or a
        retention option is invalid; `field` names it, e.g. "set.bucket".
        """
        return self._run(self._api.set_options(table_id, set or {}, remove or ()))

    def alter_table(
        self, table_id: str, changes: Sequence[SchemaChange | Mapping[str, Any]]
    ) -> TableResponse:
        """Apply Paimon schema changes (models such as AddColumn, or their JSON), all or none, as the
        table's next schema version; files written before read a new column as null.

        BadRequest when a change is refused; `field` names it, e.g. "changes[1].newDataType".
        """
        return self._run(self._api.alter_table(table_id, changes))

    def expire(self, table_id: str) -> ExpireResponse:
        """Expire the snapshots the table's retention options allow now; tags and consumers keep theirs."""
        return self._run(self._api.expire(table_id))

    def list_tags(self, table_id: str) -> TagListResponse:
        return self._run(self._api.list_tags(table_id))

    def create_tag(self, table_id: str, name: str, snapshot_id: int | None = None) -> TagModel:
        """Tag a retained snapshot (the latest by default): its files outlive expiration until the tag goes.

        NotFound when the snapshot is not retained; Conflict when the tag exists.
        """
        return self._run(self._api.create_tag(table_id, name, snapshot_id))

    def delete_tag(self, table_id: str, name: str) -> DeleteTagResponse:
        """Delete a tag, and the files only it kept alive; NotFound when there is no such tag."""
        return self._run(self._api.delete_tag(table_id, name))

    def rollback(
        self, table_id: str, *, snapshot_id: int | None = None, tag: str | None = None
    ) -> RollbackResponse:
        """Make a retained snapshot or a tag (give exactly one) the latest again.

        Later snapshots and tags are removed with the files only they referenced; there is no undo.
        """
        return self._run(self._api.rollback(table_id, snapshot_id, tag))

    def list_consumers(self, table_id: str) -> ConsumerListResponse:
        return self._run(self._api.list_consumers(table_id))

    def set_consumer(self, table_id: str, consumer_id: str, next_snapshot_id: int) -> ConsumerModel:
        """Register or move a consumer: expiration keeps `next_snapshot_id` and later for it.

        BadRequest (field nextSnapshotId) when that snapshot is expired or beyond the next one.
        """
        return self._run(self._api.set_consumer(table_id, consumer_id, next_snapshot_id))

    def delete_consumer(self, table_id: str, consumer_id: str) -> None:
        """Forget a consumer, so that expiration no longer waits for it; NotFound when there is none."""
        self._run(self._api.delete_consumer(table_id, consumer_id))

    def clean_orphans(
        self, table_id: str, *, older_than_seconds: float = 86_400.0, dry_run: bool = False
    ) -> CleanOrphansResponse:
        """Delete the table's files that no retained snapshot or tag references; with `dry_run`, list them.

        Only files older than `older_than_seconds` go: a younger one may belong to a commit on its way.
        """
        return self._run(self._api.clean_orphans(table_id, older_than_seconds, dry_run))
