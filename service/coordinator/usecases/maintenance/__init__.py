"""Table maintenance under the table lock, one module per use case: schema evolution (ALTER TABLE, table
options), expiration, tags, rollback, consumers, orphan cleanup and partition mark-done, each recorded in
the table's history.

Every action holds its table through `TableHolds` (as commits do) and writes its database change and its
history row in one fenced transaction (`table_actions`); the files it may delete are what only the
removed snapshots and tags referenced (`domain/file_references.py`). Storage, not the database, is the
truth for tags and consumers: Paimon's engines and pypaimon read and write the same `tag/tag-<name>` and
`consumer/consumer-<id>` files.
"""

from __future__ import annotations

from coordinator.clock import Clock
from coordinator.commit.in_flight import InFlight
from coordinator.commit.queue import CommitQueues
from coordinator.commit.table_state import TableStates
from coordinator.observability.metrics import Metrics
from coordinator.storage.fileio import FileIO
from coordinator.usecases.maintenance.consumers import Consumers
from coordinator.usecases.maintenance.expiration import Expiration
from coordinator.usecases.maintenance.orphans import Orphans
from coordinator.usecases.maintenance.partition_marks import PartitionMarks
from coordinator.usecases.maintenance.rollback import Rollback
from coordinator.usecases.maintenance.schema_evolution import SchemaEvolution
from coordinator.usecases.maintenance.table_actions import TableActions
from coordinator.usecases.maintenance.tags import Tags
from coordinator.usecases.reads import Reads
from coordinator.usecases.table_hold import TableHolds
from coordinator.usecases.tables import Tables

__all__ = ["Maintenance"]


class Maintenance:
    """The maintenance use cases of one service, under the names the routers call."""

    def __init__(
        self,
        fileio: FileIO,
        tables: Tables,
        reads: Reads,
        holds: TableHolds,
        states: TableStates,
        queues: CommitQueues,
        in_flight: InFlight,
        *,
        metrics: Metrics,
        clock: Clock,
    ) -> None:
        actions = TableActions(fileio, tables, reads, holds, metrics=metrics, clock=clock)
        self.schemas = SchemaEvolution(actions, states)
        self.expiration = Expiration(actions, queues)
        self.tags = Tags(actions)
        self.rollbacks = Rollback(actions, states, self.expiration)
        self.consumers = Consumers(actions)
        self.orphans = Orphans(actions, in_flight)
        self.partition_marks = PartitionMarks(actions)

        self.alter_table = self.schemas.alter_table
        self.set_options = self.schemas.set_options
        self.expire = self.expiration.expire
        self.after_commit = self.expiration.after_commit
        self.create_tag = self.tags.create_tag
        self.list_tags = self.tags.list_tags
        self.delete_tag = self.tags.delete_tag
        self.rollback = self.rollbacks.rollback
        self.set_consumer = self.consumers.set_consumer
        self.list_consumers = self.consumers.list_consumers
        self.delete_consumer = self.consumers.delete_consumer
        self.clean_orphans = self.orphans.clean_orphans
        self.mark_partitions_done = self.partition_marks.mark_done

    def close(self) -> None:
        """Wait for expiration running on the background thread."""
        self.expiration.close()
