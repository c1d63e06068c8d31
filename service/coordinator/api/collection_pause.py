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
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable

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


def _nothing() -> None:
    pass
