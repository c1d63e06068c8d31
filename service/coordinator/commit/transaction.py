"""A multi-table transaction's own steps: its parts (one per table, each a Member resolved from the
request's entry for that table) and what their decisions come to (every part committed, a resend of this
very transaction, or the first part's failure, naming its table or field)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coordinator.commit.answers import refs
from coordinator.commit.member import Intake, Member, Refused, Rejected, Replayed, TableDecisions
from coordinator.commit.phases import PhaseTimer
from coordinator.commit.resends import reused
from coordinator.db import repositories as repo
from coordinator.domain.committable import ResolvedCommittable, resolve_committable
from coordinator.errors import (
    CommitConflict,
    DataFileMissing,
    IdentifierReused,
    InvalidRequest,
    TableNotFound,
)
from coordinator.usecases.tables import Table, Tables, version_of
from coordinator_client.models import (
    CommitRequest,
    TableSnapshots,
    TransactionRequest,
    TransactionResponse,
    TransactionTableChange,
)


@dataclass
class TransactionPart:
    """One table's part of a transaction, as decided under the locks."""

    index: int
    """Its position in the request's `tables`, for the field an error names."""
    table: Table
    member: Member


def intake_parts(
    request: TransactionRequest, tables: Tables, max_tables: int, now_millis: int, started: float
) -> list[TransactionPart]:
    """Each table's entry resolved against the table as this process knows it (checked again under the
    locks).

    Raises:
        InvalidRequest, TableNotFound: naming the field (`tables`, `tables[i]...`).
    """
    if len(request.tables) > max_tables:
        raise InvalidRequest(
            f"a transaction changes at most {max_tables} tables; this one names "
            f"{len(request.tables)} (setting transaction_max_tables)",
            field="tables",
        )
    names = [change.table for change in request.tables]
    parts: list[TransactionPart] = []
    for i, change in enumerate(request.tables):
        if change.table in names[:i]:
            raise InvalidRequest(
                f"table {change.table} is named twice (tables[{names.index(change.table)}] and "
                f"tables[{i}]): send one change per table",
                field=f"tables[{i}].table",
            )
        try:
            table = tables.get(change.table)
        except TableNotFound:
            raise TableNotFound(f"table {change.table} does not exist", field=f"tables[{i}].table") from None
        intake = _intake_of(_commit_request(request, change), i)
        resolved, _ = intake(table, now_millis)
        member = Member(resolved, None, intake, version_of(table), transaction=tuple(names))
        member.phases = PhaseTimer(started)
        parts.append(TransactionPart(i, table, member))
    return parts


def recorded_answer(
    parts: list[TransactionPart], recorded: list[tuple[TransactionPart, repo.StoredCommit]]
) -> TransactionResponse:
    """A resend: every part was committed with the same changes, by this very transaction (the same
    tables). A part recorded otherwise means another commit used this commitUser and identifier:
    IDENTIFIER_REUSED, nothing written."""
    tables = sorted(p.table.id for p in parts)
    for part, stored in recorded:
        named = (stored.details or {}).get("transaction")
        if not isinstance(named, list) or sorted(str(t) for t in named) != tables:
            raise identifier_reused(part, stored, "by another commit")
    if len(recorded) != len(parts):
        part, stored = recorded[0]
        raise identifier_reused(part, stored, "by a transaction over other tables")
    return TransactionResponse(
        tables=[
            TableSnapshots.model_validate({"table": p.table.id, "snapshots": stored.snapshots})
            for p, stored in recorded
        ],
        deduplicated=True,
    )


def identifier_reused(part: TransactionPart, stored: repo.StoredCommit, how: str) -> IdentifierReused:
    """The transaction's commitUser and identifier name a recorded commit with other changes on the
    part's table: 409 naming the table and what is recorded there."""
    refused = reused(stored, part.member.resolved, None)
    assert isinstance(refused, IdentifierReused)
    conflict = refused.conflict
    message = f"{part.table.id}: commitUser and identifier were used before {how}; {conflict.message}"
    return IdentifierReused(conflict.model_copy(update={"table": part.table.id, "message": message}))


def _commit_request(request: TransactionRequest, change: TransactionTableChange) -> CommitRequest:
    """A table's part as the single commit it means (already validated field by field)."""
    return CommitRequest.model_construct(
        commit_user=request.commit_user,
        identifier=request.identifier,
        watermark=change.watermark,
        properties=change.properties,
        overwrite=change.overwrite,
        base_snapshot_id=change.base_snapshot_id,
        messages=change.messages,
    )


def _intake_of(commit: CommitRequest, index: int) -> Intake:
    """Resolves the part against a table (again under the hold, if the table changed meanwhile)."""

    def intake(table: Table, now_millis: int) -> tuple[ResolvedCommittable, None]:
        try:
            return resolve_committable(commit, table.shape, now_millis=now_millis), None
        except InvalidRequest as invalid:
            raise placed(invalid, index) from None

    return intake


def placed(invalid: InvalidRequest, index: int) -> InvalidRequest:
    """The error of a table's part, its field named from the transaction's body."""
    field = f"tables[{index}].{invalid.field}" if invalid.field else f"tables[{index}]"
    return InvalidRequest(invalid.message, field=field)


def placed_file(failed: DataFileMissing, index: int) -> DataFileMissing:
    """A file check's error of a table's part (of the same kind), its file named from the transaction's
    body: `tables[i].messages[j].newFiles[k]`."""
    field = f"tables[{index}].{failed.field}" if failed.field else f"tables[{index}].messages"
    return type(failed)(failed.message, field=field)


def transaction_answer(
    parts: Sequence[TransactionPart], decided: Sequence[TableDecisions]
) -> TransactionResponse:
    """What a transaction's decisions come to: every part committed, a resend of every part, or the first
    part's failure raised (nothing was written then).

    Raises:
        CommitConflict (naming the table), IdentifierReused, InvalidRequest (naming the field).
    """
    by_member = {id(d.member): (t, d) for t in decided for d in t.decisions}
    recorded = []
    for part in parts:
        found = by_member.get(id(part.member))
        if found is None:
            continue
        table_decisions, decision = found
        part.table = table_decisions.table
        if isinstance(decision, Rejected):
            conflict = decision.conflict
            message = f"{part.table.id}: {conflict.message}"
            raise CommitConflict(conflict.model_copy(update={"table": part.table.id, "message": message}))
        if isinstance(decision, Refused) and decision.stored is not None:
            raise identifier_reused(part, decision.stored, "with other changes")
        if isinstance(decision, Refused) and isinstance(decision.error, InvalidRequest):
            raise placed(decision.error, part.index)
        if isinstance(decision, Refused):
            raise decision.error
        if isinstance(decision, Replayed):
            recorded.append((part, decision.stored))
    if recorded:  # a resend: each part returned its record before anything was built
        return recorded_answer(list(parts), recorded)
    snapshots = {id(c.member): c.built.snapshots for t in decided for c in t.committed}
    return TransactionResponse(
        tables=[TableSnapshots(table=p.table.id, snapshots=refs(snapshots[id(p.member)])) for p in parts],
    )
