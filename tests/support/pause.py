"""Stall a thread at the entry of a chosen function, as a GC pause or a frozen VM would stall a holder.

Nothing of the code under test changes: the thread runs under a trace function that blocks when the
function is called, until the test resumes it. Other threads, the lease keeper included, run on.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class PausedCall(Generic[T]):
    """Runs `call` on its own thread and holds it at the first call of `at` until `resume()`.

    With `returning=True` it holds when `at` returns instead (its work done, its caller not yet on), and
    `when`, given the frame of `at`, picks which call of it.
    """

    def __init__(
        self,
        call: Callable[[], T],
        *,
        at: Callable[..., Any],
        returning: bool = False,
        when: Callable[[FrameType], bool] | None = None,
    ) -> None:
        self._call = call
        self._code = at.__code__
        self._event = "return" if returning else "call"
        self._when = when
        self.reached = threading.Event()
        self._resume = threading.Event()
        self._result: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="paused-call", daemon=True)

    def start(self, timeout: float = 60) -> PausedCall[T]:
        """Start, and return once the thread stands at `at` (fails if it finished without reaching it)."""
        self._thread.start()
        while not self.reached.wait(0.01):
            if not self._thread.is_alive():
                raise AssertionError(f"finished without reaching {self._code.co_name}: {self._error!r}")
            timeout -= 0.01
            if timeout <= 0:
                raise AssertionError(f"did not reach {self._code.co_name}")
        return self

    def resume(self, timeout: float = 60) -> T:
        """Let the thread go on; its result, or its exception raised here."""
        self._resume.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the resumed call did not finish"
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]

    def _trace(self, frame: FrameType, event: str, arg: object) -> Any:
        if frame.f_code is not self._code or self.reached.is_set():
            return None  # no tracing inside other functions
        if event == self._event and (self._when is None or self._when(frame)):
            self.reached.set()
            self._resume.wait()
        return self._trace  # to see this frame's return event

    def _run(self) -> None:
        sys.settrace(self._trace)
        try:
            self._result = self._call()
        except BaseException as error:  # handed to resume()
            self._error = error
        finally:
            sys.settrace(None)
