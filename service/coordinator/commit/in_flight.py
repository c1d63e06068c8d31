"""The commits this process is working on: for the ops API, and for the files they will name (not orphans)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from coordinator.commit.member import Member
from coordinator_client.models import InFlightCommitModel


class InFlight:
    def __init__(self) -> None:
        self._members: dict[int, tuple[str, Member]] = {}
        self._guard = threading.Lock()

    @contextmanager
    def tracking(self, parts: Sequence[tuple[str, Member]]) -> Iterator[None]:
        """While the block runs, each (table id, member) is in flight; a transaction is listed once, under
        its first part's table."""
        with self._guard:
            for table_id, member in parts:
                self._members[id(member)] = (table_id, member)
        try:
            yield
        finally:
            with self._guard:
                for _, member in parts:
                    del self._members[id(member)]

    def file_names(self, table_id: str) -> set[str]:
        """The files that commits in flight here name in this table."""
        with self._guard:
            members = [m for t, m in self._members.values() if t == table_id]
        return {name for m in members for name in m.resolved.file_names}

    def listing(self) -> list[InFlightCommitModel]:
        """Oldest first, each with the phase it is in and the phases it went through."""
        with self._guard:
            members = sorted(self._members.values(), key=lambda p: p[1].phases.started)
        now = time.perf_counter()
        listed: set[tuple[str, ...]] = set()
        answer = []
        for table_id, member in members:
            if member.transaction:
                if member.transaction in listed:
                    continue
                listed.add(member.transaction)
            answer.append(
                InFlightCommitModel(
                    table_id=table_id,
                    commit_user=member.resolved.commit_user,
                    identifier=member.resolved.identifier,
                    phase=member.phases.current,
                    started_at=member.phases.started_at,
                    elapsed_ms=round((now - member.phases.started) * 1000, 3),
                    timings=dict(member.phases.timings),
                    tables=list(member.transaction) or None,
                )
            )
        return answer
