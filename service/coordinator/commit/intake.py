"""Intake: a door's request turned into a Member, checked before it waits for any lock.

The committable is resolved against this process's copy of the table, without a database read (the
hold checks the table's version again and resolves it anew if the table moved); only a rejection is
checked against the table as it is now, so a stale copy never turns a valid commit away. Then an answer
recorded for its Idempotency-Key is replayed at once, and the files it adds are checked on storage.
"""

from __future__ import annotations

import time

from sqlalchemy import Engine

from coordinator.clock import Clock
from coordinator.commit.file_checks import FileChecks
from coordinator.commit.member import Intake, Member
from coordinator.commit.phases import PhaseTimer
from coordinator.commit.resends import answer_by_key, answer_from_record, standing_commit
from coordinator.commit.snapshot_proposals import ProposedSnapshot, SnapshotProposal, read_proposal
from coordinator.db import repositories as repo
from coordinator.domain.committable import ResolvedCommittable, resolve_committable
from coordinator.errors import DataFileMissing, InvalidRequest
from coordinator.storage.fileio import FileIO
from coordinator.usecases.manifests import ManifestStore
from coordinator.usecases.tables import Table, Tables, version_of
from coordinator_client.models import CommitRequest, CommitResponse


def native_intake(request: CommitRequest) -> Intake:
    """A ManifestCommittable (the native door): its messages resolved against the table."""

    def intake(table: Table, now_millis: int) -> tuple[ResolvedCommittable, None]:
        return resolve_committable(request, table.shape, now_millis=now_millis), None

    return intake


def proposal_intake(fileio: FileIO, proposal: SnapshotProposal) -> Intake:
    """A snapshot a Paimon engine finished itself (the REST door): resolved from its delta manifests."""

    def intake(table: Table, _now: int) -> tuple[ResolvedCommittable, ProposedSnapshot]:
        return read_proposal(proposal, table, ManifestStore.for_table(fileio, table))

    return intake


class Intakes:
    """What every door's request goes through before it queues for its table's lock."""

    def __init__(self, engine: Engine, tables: Tables, file_checks: FileChecks, clock: Clock) -> None:
        self._engine = engine
        self._tables = tables
        self._file_checks = file_checks
        self._clock = clock

    def member(self, table_id: str, intake: Intake, idempotency_key: str | None) -> tuple[Table, Member]:
        """The request resolved against the table this process knows (again against the table as it is
        now, only when that refuses it).

        Raises:
            TableNotFound, InvalidRequest.
        """
        started = time.perf_counter()
        table = self._tables.cached(table_id)
        try:
            resolved, proposed = intake(table, self._clock.local_millis())
        except InvalidRequest:
            current = self._tables.get(table_id)
            if version_of(current) == version_of(table):
                raise
            table = current
            resolved, proposed = intake(table, self._clock.local_millis())
        member = Member(
            resolved, idempotency_key, intake, version_of(table), proposed, phases=PhaseTimer(started)
        )
        return table, member

    def answer_before_lock(self, table: Table, member: Member) -> CommitResponse | None:
        """The answer a request gets without the lock: the terminal one recorded for its Idempotency-Key,
        or its record when it stands already and names files maintenance removed since; None: it queues.
        The commitUser + identifier check happens under the lock, where it cannot race.

        Raises:
            IdempotencyKeyReused, CommitConflict (a recorded rejection), DataFileMissing and its kin.
        """
        key = member.idempotency_key
        if key is not None:
            keyed = answer_by_key(self._engine, table.id, key, member.resolved, member.proposed)
            if keyed is not None:
                return keyed
        stood = self.verify_files(table, member.resolved)
        return None if stood is None else answer_from_record(stood)

    def verify_files(self, table: Table, resolved: ResolvedCommittable) -> repo.StoredCommit | None:
        """Every file the committable adds is on storage and what it claims (file_checks); returns the
        record of these very changes when they stand already, whose files maintenance may have removed.

        Raises:
            DataFileMissing and its kin, naming the file.
        """
        try:
            self._file_checks.verify(table, resolved)
        except DataFileMissing:
            standing = standing_commit(self._engine, table.id, resolved)
            if standing is None:
                raise
            return standing
        return None
