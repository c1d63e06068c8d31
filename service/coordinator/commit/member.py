"""One commit request as the pipeline carries it, and what deciding it under the lock came to.

A `Member` is what was asked: the committable resolved against a version of its table, how to resolve it
again, the door's extras (a proposed snapshot, the transaction it is part of), its phase timer and the
future its answer arrives through. Deciding it returns a `Decision`, a value: committed with the
snapshots built for it, rejected with its conflict, refused, answered from its record, or left for the
next group. Nothing of a decision is visible until the commit point records it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from coordinator.commit.phases import PhaseTimer
from coordinator.commit.snapshot_proposals import ProposedSnapshot
from coordinator.commit.table_state import TableState
from coordinator.db import repositories as repo
from coordinator.domain.committable import ResolvedCommittable
from coordinator.errors import CommitConflict, CoordinatorError
from coordinator.usecases.tables import Table, version_of
from coordinator_client.models import CommitResponse, ConflictModel
from paimon_format.manifest import ManifestEntry
from paimon_format.snapshot import Snapshot

Intake = Callable[[Table, int], tuple[ResolvedCommittable, ProposedSnapshot | None]]
"""How a door turns its request into what the pipeline decides, against a table at a time (ms): a
native committable's messages (resolved), or a proposed snapshot (resolved from its delta, and itself)."""


@dataclass(eq=False)
class Member:
    """One commit request in a group (or one table's part of a transaction)."""

    resolved: ResolvedCommittable
    idempotency_key: str | None
    intake: Intake
    """Resolves the request again when the table turns out to have changed."""
    version: tuple[str, int]
    """The (uuid, schema id) of the table `resolved` was resolved against."""
    proposed: ProposedSnapshot | None = None
    """A snapshot the client finished itself (REST protocol): accepted as is, or not at all."""
    transaction: tuple[str, ...] = ()
    """The tables of the multi-table transaction it is one table's part of."""
    phases: PhaseTimer = field(default_factory=lambda: PhaseTimer(time.perf_counter()))
    answer: Future[CommitResponse] = field(default_factory=Future)

    @property
    def key(self) -> tuple[str, int]:
        return self.resolved.commit_user, self.resolved.identifier

    @property
    def record_key(self) -> repo.RecordKey:
        """How its record is found: by its name, and for the batch identifier by its changes too."""
        return repo.record_key(self.resolved.commit_user, self.resolved.identifier, self.resolved.digest)

    def resolve_for(self, table: Table, *, now_millis: int) -> None:
        """Make sure the committable is resolved against `table` as it is now: one resolved against an
        older version (another replica re-created or altered the table) is resolved again from its
        request, so it gets the answer a replica that never saw the old table would give.

        Raises:
            InvalidRequest: it is not valid for the table now.
        """
        version = version_of(table)
        if self.version != version:
            self.resolved, self.proposed = self.intake(table, now_millis)
            self.version = version


@dataclass
class Built:
    """The snapshots built for one member on top of the table's state, with their delta entries."""

    snapshots: list[Snapshot] = field(default_factory=list)
    deltas: dict[int, list[ManifestEntry]] = field(default_factory=dict)
    """The delta entries of each snapshot, by snapshot id: the live-file index advances by them."""
    records: dict[int, list[bytes]] = field(default_factory=dict)
    """The Avro records of those entries, by snapshot id, where the manifest write encoded them."""

    def add(
        self, snapshot: Snapshot, entries: list[ManifestEntry], records: list[bytes] | None = None
    ) -> None:
        self.snapshots.append(snapshot)
        self.deltas[snapshot.id] = entries
        if records is not None:
            self.records[snapshot.id] = records

    def in_order(self) -> list[tuple[int, list[ManifestEntry]]]:
        """Each snapshot with its delta entries, in order."""
        return [(s.id, self.deltas[s.id]) for s in self.snapshots]


@dataclass(frozen=True)
class Committed:
    member: Member
    built: Built
    extends: int | None = None
    """The history row (its id) of a commit already recorded whose later snapshot this is (another commit
    kind): Paimon's engines send a commit's APPEND and COMPACT separately, and its snapshots join that row."""


@dataclass(frozen=True)
class Rejected:
    member: Member
    conflict: ConflictModel
    advanced: bool = False
    """Part of the member had already advanced the table's state: the rest of its group waits for a state
    rebuilt from what is committed."""


@dataclass(frozen=True)
class Refused:
    """Not valid, or not a commit at all (its name taken by other changes): never recorded."""

    member: Member
    error: CoordinatorError
    stored: repo.StoredCommit | None = None
    """The record whose name or key the member reused, when that is why."""


@dataclass(frozen=True)
class Replayed:
    """A resend: answered from its record."""

    member: Member
    answer: CommitResponse | CommitConflict
    stored: repo.StoredCommit


@dataclass(frozen=True)
class Later:
    """Left for the next group: a resend racing its original, or what followed a mid-commit rejection."""

    member: Member


@dataclass(frozen=True)
class Failed:
    """Part of its snapshots were published when a writer outside the coordinator took the next id: it
    can be neither answered as committed nor decided again whole."""

    member: Member
    error: BaseException


Decision = Committed | Rejected | Refused | Replayed | Later | Failed


@dataclass
class TableDecisions:
    """How one table's members were decided under its lock, on top of head `previous_id`."""

    table: Table
    state: TableState | None
    """None for members rejected before their table's state was looked at (the hold failed)."""
    previous_id: int
    decisions: list[Decision]

    @property
    def committed(self) -> list[Committed]:
        return [d for d in self.decisions if isinstance(d, Committed)]

    @property
    def rejected(self) -> list[Rejected]:
        return [d for d in self.decisions if isinstance(d, Rejected)]

    @property
    def later(self) -> list[Member]:
        return [d.member for d in self.decisions if isinstance(d, Later)]

    def snapshots(self) -> list[Snapshot]:
        return [s for d in self.committed for s in d.built.snapshots]

    @classmethod
    def all_rejected(
        cls, table: Table, members: Sequence[Member], decided: Sequence[TableDecisions], model: ConflictModel
    ) -> TableDecisions:
        """Every member of the table rejected with `model` (the hold failed), but those answered from their
        records."""
        replayed = {id(d.member): d for t in decided for d in t.decisions if isinstance(d, Replayed)}
        decisions: list[Decision] = [replayed.get(id(m)) or Rejected(m, model) for m in members]
        return cls(table, None, 0, decisions)

    def requeue_from(self, taken: int) -> None:
        """An outside writer took snapshot id `taken` before our publication: the committed members whose
        snapshots start there go to the next group; those before it stand."""
        for index, decision in enumerate(self.decisions):
            if not isinstance(decision, Committed) or not decision.built.snapshots:
                continue
            first, last = decision.built.snapshots[0].id, decision.built.snapshots[-1].id
            if last < taken:
                continue
            if first < taken:
                error = RuntimeError(
                    f"snapshot {first} of this commit was published, and snapshot {taken} was taken by a "
                    "writer outside the coordinator; the rest is not committed"
                )
                self.decisions[index] = Failed(decision.member, error)
            else:
                self.decisions[index] = Later(decision.member)
