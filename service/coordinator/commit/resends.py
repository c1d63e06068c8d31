"""Answers to resends: how a request stands to the record found under its name or Idempotency-Key.

A resend is the same changes, not the same name (domain.commit_digest). The same changes sent again are
answered from the record, whatever became of them (committed: its snapshots; rejected for good: its
conflict). Other changes under a recorded name are refused and change nothing: IDENTIFIER_REUSED for a
commitUser + identifier (the batch identifier names no commit, so its records are found by their
changes and never refuse one), IDEMPOTENCY_KEY_REUSED for a key, as the IETF idempotency-key draft says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Engine

from coordinator.commit.member import Member
from coordinator.commit.snapshot_proposals import ProposedSnapshot
from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.domain.committable import ResolvedCommittable
from coordinator.errors import CommitConflict, CoordinatorError, IdempotencyKeyReused, IdentifierReused
from coordinator_client.models import CommitResponse, ConflictModel, RecordedCommitModel, SnapshotRef
from paimon_format.snapshot import BATCH_IDENTIFIER, CommitKind

Relation = Literal["resend", "extends", "other"]
"""How a request stands to the record found under its name or Idempotency-Key: the same changes sent
again (answered from the record), the other kind of a REST commit whose first snapshot is recorded (its
snapshot joins the record), or other changes under a name already used (refused, see reused)."""


def relation_to_record(
    stored: repo.StoredCommit, resolved: ResolvedCommittable, proposed: ProposedSnapshot | None
) -> Relation:
    """A resend is the same changes, not the same name (domain.commit_digest). Paimon's engines send the
    APPEND and the COMPACT of one commit as two snapshots under one name: a proposal of a kind the record
    does not have yet extends it. Rows recorded before digests were kept answer as they always did."""
    if (stored.commit_user, stored.identifier) != (resolved.commit_user, resolved.identifier):
        return "other"  # an Idempotency-Key sent with another commit
    digest = resolved.digest
    kind = None if proposed is None else proposed.snapshot.commit_kind.value
    if stored.digest is None or stored.digest == digest:
        legacy = stored.digest is None and kind is not None and stored.outcome == "committed"
        if legacy and not any(s.get("commitKind") == kind for s in stored.snapshots):
            return "extends"
        return "resend"
    if kind is None or stored.outcome != "committed":
        return "other"
    own = [s for s in stored.snapshots if s.get("commitKind") == kind]
    if any(s.get("digest") == digest for s in own):
        return "resend"
    if any(s.get("digest") is not None for s in own):
        return "other"
    return "extends"


@dataclass(frozen=True)
class Found:
    """The record a request was found to stand in some relation to."""

    relation: Relation
    stored: repo.StoredCommit
    resolved: ResolvedCommittable

    def refusal(self, idempotency_key: str | None) -> CoordinatorError:
        return reused(self.stored, self.resolved, idempotency_key)


def answer_by_key(
    engine: Engine,
    table_id: str,
    key: str,
    resolved: ResolvedCommittable,
    proposed: ProposedSnapshot | None,
) -> CommitResponse | None:
    """Before the lock: the terminal answer recorded for this Idempotency-Key, if the request is the one
    that was recorded; None when nothing is recorded for it, or when the table has snapshots left
    unpublished (a failed store): then the resend takes the queue, whose catch-up publishes them before
    it answers from the record.

    Raises:
        IdempotencyKeyReused: the key was sent with another request; CommitConflict: it was rejected.
    """
    with read_only(engine) as conn:
        stored = repo.find_by_idempotency_key(conn, table_id, key)
        if stored is None or repo.unpublished_snapshots(conn, table_id):
            return None
    if relation_to_record(stored, resolved, proposed) != "resend":
        raise reused(stored, resolved, key)
    return answer_from_record(stored)


def standing_commit(engine: Engine, table_id: str, resolved: ResolvedCommittable) -> repo.StoredCommit | None:
    """The committed record of these very changes, if any: a resend of a commit that stands may name
    files that maintenance has removed since, and is answered from it."""
    with read_only(engine) as conn:
        stored = repo.find_committed(
            conn, table_id, resolved.commit_user, resolved.identifier, resolved.digest
        )
    if stored is None or relation_to_record(stored, resolved, None) != "resend":
        return None
    return stored


def record_of(
    engine: Engine, table_id: str, context: repo.GroupContext, member: Member, head: int
) -> Found | None:
    """The record `member` stands in some relation to, under the lock; None: it is a new commit.
    `head` is the snapshot the member would build on."""
    resolved, proposed = member.resolved, member.proposed
    stored = context.recorded(member.record_key, member.idempotency_key)
    if stored is not None:
        return Found(relation_to_record(stored, resolved, proposed), stored, resolved)
    if proposed is None or not joins_batch_commit(resolved, proposed):
        return None
    with read_only(engine) as conn:
        latest = repo.find_committed(conn, table_id, resolved.commit_user, BATCH_IDENTIFIER)
    return batch_compaction_record(latest, resolved, head)


def joins_batch_commit(resolved: ResolvedCommittable, proposed: ProposedSnapshot) -> bool:
    """A COMPACT proposed under the batch identifier may be the second half of a batch commit whose
    APPEND is recorded: Paimon's engines send the two as two snapshots of one commit."""
    return resolved.identifier == BATCH_IDENTIFIER and proposed.snapshot.commit_kind == CommitKind.COMPACT


def batch_compaction_record(
    latest: repo.StoredCommit | None, resolved: ResolvedCommittable, head: int
) -> Found | None:
    """How a batch COMPACT proposal stands to its commit user's latest batch commit (`latest`): the same
    compaction sent again (its snapshot's digest is recorded there), or the COMPACT of that very commit
    (the commit holds the head, on which the proposal builds, and no COMPACT yet); None: a commit of its
    own, as a standalone compaction (`CALL sys.compact`) is."""
    if latest is None:
        return None
    if any(s.get("digest") == resolved.digest for s in latest.snapshots):
        return Found("resend", latest, resolved)
    kinds = [s.get("commitKind") for s in latest.snapshots]
    if latest.snapshots and latest.snapshots[-1].get("id") == head and CommitKind.COMPACT.value not in kinds:
        return Found("extends", latest, resolved)
    return None


def reused(
    stored: repo.StoredCommit, resolved: ResolvedCommittable, idempotency_key: str | None
) -> CoordinatorError:
    """The refusal of a request whose name or Idempotency-Key is taken by other changes; nothing of it is
    written or recorded."""
    if idempotency_key is not None and stored.idempotency_key == idempotency_key:
        return IdempotencyKeyReused(
            f"Idempotency-Key {idempotency_key} was sent before with another request (commit "
            f"{stored.commit_user}/{stored.identifier}, {stored.outcome}); send new changes with a new key",
            field="Idempotency-Key",
        )
    user, identifier = resolved.commit_user, resolved.identifier
    snapshots = [SnapshotRef.model_validate(s) for s in stored.snapshots]
    ids = ", ".join(str(s.id) for s in snapshots) or "none"
    return IdentifierReused(
        ConflictModel(
            type="IDENTIFIER_REUSED",
            message=(
                f"commit {user}/{identifier} is recorded as {stored.outcome} (snapshots: {ids}) with other "
                "changes; an identifier names one commit (only the batch identifier names none): nothing "
                "was written"
            ),
            recorded=RecordedCommitModel(
                commit_user=user,
                identifier=identifier,
                outcome="committed" if stored.outcome == "committed" else "rejected",
                snapshots=snapshots,
            ),
        )
    )


def recorded_answer(stored: repo.StoredCommit) -> CommitResponse | CommitConflict:
    """The answer a recorded commit gives a resend: its snapshots, or its terminal rejection."""
    if stored.outcome != "committed":
        return CommitConflict(ConflictModel.model_validate(stored.conflict))
    return CommitResponse(
        snapshots=[SnapshotRef.model_validate(s) for s in stored.snapshots], deduplicated=True, timings={}
    )


def answer_from_record(stored: repo.StoredCommit) -> CommitResponse:
    """The recorded answer for a resend: its snapshots, or its rejection raised.

    Raises:
        CommitConflict: the commit was rejected.
    """
    answer = recorded_answer(stored)
    if isinstance(answer, CommitConflict):
        raise answer
    return answer
