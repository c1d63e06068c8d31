"""What the commit pipeline's steps need, built once by services.py."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine

from coordinator.clock import Clock
from coordinator.commit.batch import Batches
from coordinator.commit.catch_up import CatchUp
from coordinator.commit.decide import Decider
from coordinator.commit.in_flight import InFlight
from coordinator.commit.intake import Intakes
from coordinator.commit.publish import Publication
from coordinator.commit.queue import CommitQueues
from coordinator.commit.table_state import TableStates
from coordinator.observability.metrics import Metrics
from coordinator.storage.fileio import FileIO
from coordinator.usecases.table_hold import TableHolds
from coordinator.usecases.tables import Tables


@dataclass(frozen=True)
class Collaborators:
    """What the pipeline's steps need, built once (services.py)."""

    engine: Engine
    bookkeeping: Engine
    fileio: FileIO
    tables: Tables
    holds: TableHolds
    intakes: Intakes
    queues: CommitQueues
    batches: Batches
    in_flight: InFlight
    catch_up: CatchUp
    decider: Decider
    publication: Publication
    states: TableStates
    metrics: Metrics
    clock: Clock
