"""The compare-and-set a proposed snapshot (Paimon's REST protocol) must pass to be published."""

from __future__ import annotations

import pytest

from coordinator.domain.conflicts import Conflict, check_compare_and_set
from paimon_format.snapshot import CommitKind, Snapshot


def snapshot(snapshot_id: int, uuid: str | None) -> Snapshot:
    return Snapshot(
        id=snapshot_id,
        schema_id=0,
        base_manifest_list="manifest-list-a-0",
        delta_manifest_list="manifest-list-a-1",
        total_record_count=1,
        delta_record_count=1,
        commit_user="writer",
        commit_identifier=snapshot_id,
        commit_kind=CommitKind.APPEND,
        time_millis=0,
        uuid=uuid,
    )


def proposal(snapshot_id: int, base: str | None) -> tuple[int, str | None]:
    return snapshot_id, base


@pytest.mark.parametrize(
    ("head", "proposed"),
    [
        (None, proposal(1, None)),  # the first snapshot of an empty table
        (snapshot(4, "u4"), proposal(5, "u4")),  # built on the head
        (snapshot(4, None), proposal(5, "whatever")),  # a head without a uuid (an old writer's): the id
        (snapshot(4, "u4"), proposal(5, None)),  # a Paimon 1.x client sends no base uuid: the id
    ],
)
def test_a_proposal_built_on_the_head_passes(head: Snapshot | None, proposed: tuple[int, str | None]) -> None:
    check_compare_and_set(head, *proposed)


@pytest.mark.parametrize(
    ("head", "proposed"),
    [
        (None, proposal(1, "u0")),  # built on a snapshot the (now empty) table does not have
        (None, proposal(2, None)),
        (snapshot(4, "u4"), proposal(5, "u3")),  # the head moved on since the client looked
        (snapshot(4, "u4"), proposal(4, "u4")),  # the head's own id again
        (snapshot(4, "u4"), proposal(6, "u4")),  # skips an id
        (snapshot(4, None), proposal(4, None)),
    ],
)
def test_a_proposal_not_built_on_the_head_is_a_retryable_miss(
    head: Snapshot | None, proposed: tuple[int, str | None]
) -> None:
    with pytest.raises(Conflict) as raised:
        check_compare_and_set(head, *proposed)
    assert raised.value.type == "BASE_SNAPSHOT_MOVED"
    assert raised.value.retryable
    assert raised.value.winning_snapshot_id == (head.id if head is not None else None)
