"""Annotated dependencies shared by the routers."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, ParamSpec, TypeVar

import anyio
from fastapi import Depends, Request

from coordinator.services import Services

_P = ParamSpec("_P")
_T = TypeVar("_T")


async def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


class LockThreads:
    """Threads of their own for the use cases that may wait for a table's lock: commits and maintenance.

    A sync route runs on AnyIO's default limiter (40 threads), and a commit keeps its thread for up to
    the lock acquire timeout. Queued behind a held lock, commits on that limiter would leave /health,
    /locks, /metrics and the dashboard's reads waiting for a thread in the middle of the very incident
    they are for; on this limiter they only wait for each other.
    """

    def __init__(self, threads: int) -> None:
        self._limiter = anyio.CapacityLimiter(threads)

    async def run(self, call: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """`call(*args, **kwargs)` on one of these threads."""
        return await anyio.to_thread.run_sync(partial(call, *args, **kwargs), limiter=self._limiter)


async def get_lock_threads(request: Request) -> LockThreads:
    # async: a sync dependency would itself wait for a thread of the default limiter.
    threads: LockThreads = request.app.state.lock_threads
    return threads


LockThreadsDep = Annotated[LockThreads, Depends(get_lock_threads)]
