"""No cyclic garbage collection while a big commit is parsed, decided and answered.

A commit of 10,000 files makes a few hundred thousand objects (the request's models, the manifest
entries, their encodings), all reachable until its answer and none in a cycle. Their allocation makes
CPython run full collections, each walking every object of the process and freeing nothing: measured
here, one of them added 170 ms to a 450 ms commit, and the validation of such a body took 300 ms
instead of 60. Resumed as soon as the commit returns, the collection the allocations have earned runs
while the answer is rendered (60 to 90 ms more); resumed once the answer is sent, it runs after it.
Reference counting still frees whatever is not in a cycle during the pause.

Pauses nest across threads: collection stops at the first and resumes after the last, and only if it
was enabled when the first began.

A serving process also settles its collector once it has started (settle_for_serving): everything made
at start-up (modules, the app, the engines) is frozen out of every later collection, and the youngest
generation is collected after YOUNG_GENERATION net allocations instead of 700. A small commit frees
almost all it allocates by reference counting, yet with CPython's defaults the allocations of a few
commits made a young collection, every tenth of those an older one, and now and then a full one walked
the whole heap (the tables' cached states included): measured over 3,000 commits spread over 100
tables, 0.28 ms of CPU per commit (8% of the service's) and full collections of about 120 ms each,
against 0.01 ms per commit settled.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable

YOUNG_GENERATION = 10_000
"""Net allocations of tracked objects between collections of the youngest generation (CPython: 700)."""
BIG_BODY = 256 * 1024
"""Bodies from this size (about a thousand files in JSON) pause collection; a small commit never does."""

_guard = threading.Lock()
_pauses = 0
_resume = False


def pause_collection(body_bytes: int) -> Callable[[], None]:
    """Pause cyclic collection if the body is big; returns what ends this pause (once, however often
    it is called)."""
    if body_bytes < BIG_BODY:
        return _nothing
    global _pauses, _resume
    with _guard:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    ended = threading.Event()

    def end() -> None:
        global _pauses
        with _guard:
            if ended.is_set():
                return
            ended.set()
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()

    return end


def settle_for_serving() -> None:
    """Once a serving process has started: collect what start-up left, freeze the rest out of every
    later collection, and widen the youngest generation (older ones keep their thresholds)."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION, older, oldest)


def _nothing() -> None:
    pass
