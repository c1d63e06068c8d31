"""Cursors in commit order on PostgreSQL: a consumer reading `after=<last cursor seen>` while many
transactions write events never skips one that commits after a larger cursor became visible.

The writers hold their transaction open for a while after the insert, as a commit point does between its
event rows and its COMMIT; without the advisory lock of db/repositories/events.py a later transaction's
larger id commits first all the time here, and the reader's `after` jumps over the smaller one.
"""

from __future__ import annotations

import random
import threading
import time

import pytest

from coordinator.db.engine import read_only
from coordinator.db.repositories.events import EventFilter, NewEvent, events_after, insert_events
from coordinator.services import Services

pytestmark = pytest.mark.parametrize("database_url", ["postgres"], indirect=True)

WRITERS = 8
EVENTS_EACH = 40


def test_a_reader_after_its_last_cursor_misses_no_event_of_concurrent_writers(services: Services) -> None:
    engine = services.engine
    done = threading.Event()
    committed: list[int] = []
    lock = threading.Lock()

    def write(writer: int) -> None:
        rng = random.Random(writer)
        for i in range(EVENTS_EACH):
            event = NewEvent(f"db.t{writer}", "db", f"t{writer}", None, "commit", time.time(), [i + 1])
            with engine.begin() as conn:
                insert_events(conn, [event])
                time.sleep(rng.random() * 0.01)
            with lock:
                committed.append(i)

    seen: list[int] = []

    def read() -> None:
        after = 0
        while True:
            finished = done.is_set()
            with read_only(engine) as conn:
                rows = events_after(conn, after, EventFilter(), 1000)
            seen.extend(r.id for r in rows)
            if rows:
                after = rows[-1].id
            elif finished:
                return

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    done.set()
    reader.join()

    with read_only(engine) as conn:
        everything = [r.id for r in events_after(conn, 0, EventFilter(), 100_000)]
    assert len(everything) == WRITERS * EVENTS_EACH == len(committed)
    assert seen == everything  # each once, none skipped, in cursor order
    # Per table, cursor order is the order its writer committed in.
    with read_only(engine) as conn:
        rows = events_after(conn, 0, EventFilter(), 100_000)
    for writer in range(WRITERS):
        mine = [r.snapshot_ids[0] for r in rows if r.table_id == f"db.t{writer}"]
        assert mine == list(range(1, EVENTS_EACH + 1))
