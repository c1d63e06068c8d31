"""A test double of the Hive Metastore's lock API.

No Hive Metastore can run on this machine, so the lock backend is tested against this Thrift server
instead: the real wire protocol (TBinaryProtocol over a buffered TCP socket) and the metastore's lock
semantics for locks outside transactions, as its TxnHandler implements them. Transactions are not
modelled: a request with a txnid is refused with NoSuchTxnException.
"""

from __future__ import annotations

import itertools
import socket
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from thriftpy2.server import TThreadedServer
from thriftpy2.thrift import TProcessor
from thriftpy2.transport import TServerSocket

from coordinator.locks.hive_metastore import HMS

State = HMS.LockState
Type = HMS.LockType
# Pairs of lock types that may be granted on the same object at once, as in the metastore's matrix.
_COMPATIBLE = {
    (Type.SHARED_READ, Type.SHARED_READ),
    (Type.SHARED_READ, Type.SHARED_WRITE),
    (Type.SHARED_READ, Type.EXCL_WRITE),
    (Type.SHARED_WRITE, Type.SHARED_WRITE),
}


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class _Request:
    """One lock request: its components are granted together or not at all."""

    lockid: int
    components: list[Any]
    user: str
    hostname: str
    agent_info: str | None
    state: int
    last_heartbeat: int
    acquired_at: int | None = None


def _overlap(a: Any, b: Any) -> bool:
    """Whether two components cover a common object: a database lock covers its tables, a table lock
    its partitions."""
    return (
        a.dbname == b.dbname
        and (a.tablename is None or b.tablename is None or a.tablename == b.tablename)
        and (a.partitionname is None or b.partitionname is None or a.partitionname == b.partitionname)
    )


def _conflict(a: _Request, b: _Request) -> bool:
    return any(
        _overlap(x, y) and (x.type, y.type) not in _COMPATIBLE and (y.type, x.type) not in _COMPATIBLE
        for x in a.components
        for y in b.components
    )


class _Handler:
    """The five lock calls over one table of requests, guarded by one mutex."""

    def __init__(self, timeout_seconds: float) -> None:
        self._timeout_ms = int(timeout_seconds * 1000)
        self._requests: dict[int, _Request] = {}
        self._ids = itertools.count(1)
        self._mutex = threading.Lock()

    def lock(self, rqst: Any) -> Any:
        if rqst.txnid:
            raise HMS.NoSuchTxnException(message=f"no transaction {rqst.txnid} (not modelled)")
        with self._mutex:
            self._reap()
            components = [self._normalized(c) for c in rqst.component]
            request = _Request(
                next(self._ids),
                components,
                rqst.user,
                rqst.hostname,
                rqst.agentInfo,
                State.WAITING,
                _now_ms(),
            )
            self._requests[request.lockid] = request
            self._try_grant(request)
            return HMS.LockResponse(lockid=request.lockid, state=request.state)

    def check_lock(self, rqst: Any) -> Any:
        with self._mutex:
            request = self._live(rqst.lockid)
            request.last_heartbeat = _now_ms()  # the metastore heartbeats a lock on every check
            self._try_grant(request)
            return HMS.LockResponse(lockid=request.lockid, state=request.state)

    def unlock(self, rqst: Any) -> None:
        with self._mutex:
            self._live(rqst.lockid)
            del self._requests[rqst.lockid]

    def heartbeat(self, ids: Any) -> None:
        if ids.txnid:
            raise HMS.NoSuchTxnException(message=f"no transaction {ids.txnid} (not modelled)")
        with self._mutex:
            self._live(ids.lockid).last_heartbeat = _now_ms()

    def show_locks(self, rqst: Any) -> Any:
        with self._mutex:
            self._reap()
            elements = [
                HMS.ShowLocksResponseElement(
                    lockid=r.lockid,
                    dbname=c.dbname,
                    tablename=c.tablename,
                    partname=c.partitionname,
                    state=r.state,
                    type=c.type,
                    lastheartbeat=r.last_heartbeat,
                    acquiredat=r.acquired_at,
                    user=r.user,
                    hostname=r.hostname,
                    agentInfo=r.agent_info,
                )
                for r in self._requests.values()
                for c in r.components
                if (rqst.dbname is None or c.dbname == rqst.dbname.lower())
                and (rqst.tablename is None or c.tablename == rqst.tablename.lower())
                and (rqst.partname is None or c.partitionname == rqst.partname.lower())
            ]
            return HMS.ShowLocksResponse(locks=elements)

    @staticmethod
    def _normalized(component: Any) -> Any:
        """The metastore stores names in lower case."""
        return HMS.LockComponent(
            type=component.type,
            level=component.level,
            dbname=component.dbname.lower(),
            tablename=component.tablename.lower() if component.tablename else None,
            partitionname=component.partitionname.lower() if component.partitionname else None,
        )

    def _live(self, lockid: int) -> _Request:
        self._reap()
        request = self._requests.get(lockid)
        if request is None:
            raise HMS.NoSuchLockException(message=f"No such lock lockid:{lockid}")
        return request

    def _try_grant(self, request: _Request) -> None:
        """Grant a waiting request unless it conflicts with a granted one or an earlier waiting one:
        requests are served in the order they came."""
        if request.state != State.WAITING:
            return
        blocked = any(
            other is not request
            and (other.state == State.ACQUIRED or other.lockid < request.lockid)
            and _conflict(request, other)
            for other in self._requests.values()
        )
        if not blocked:
            request.state = State.ACQUIRED
            request.acquired_at = request.last_heartbeat = _now_ms()

    def _reap(self) -> None:
        """The metastore's timeout reaper: requests not heartbeated within the timeout go away."""
        oldest = _now_ms() - self._timeout_ms
        for lockid in [r.lockid for r in self._requests.values() if r.last_heartbeat < oldest]:
            del self._requests[lockid]


class _ListeningSocket(TServerSocket):
    """Listens as soon as it is made, so the port the system chose for port 0 is known before serving."""

    def __init__(self) -> None:
        # thriftpy2's transport classes carry no annotations, hence the ignores (as in coordinator.locks).
        super().__init__(host="127.0.0.1", port=0, client_timeout=None)  # type: ignore[no-untyped-call]
        super().listen()  # type: ignore[no-untyped-call]
        assert self.sock is not None
        self.port: int = self.sock.getsockname()[1]

    def listen(self) -> None:
        """Already listening."""


class HiveMetastoreLockDouble:
    """A test double of the Hive Metastore's lock API (lock, check_lock, unlock, show_locks,
    heartbeat), served over Thrift on a loopback port from a daemon thread.

    `timeout_seconds` plays hive.txn.timeout: a lock, granted or waiting, that is neither heartbeated
    nor checked for that long is dropped.
    """

    def __init__(self, timeout_seconds: float) -> None:
        self._socket = _ListeningSocket()
        self._server = TThreadedServer(
            TProcessor(HMS.ThriftHiveMetastore, _Handler(timeout_seconds)), self._socket, daemon=True
        )
        self._thread = threading.Thread(target=self._server.serve, name="hive-metastore-double", daemon=True)
        self.uri = f"thrift://127.0.0.1:{self._socket.port}"

    def __enter__(self) -> HiveMetastoreLockDouble:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.close()
        # The accept loop only sees that it was closed once accept returns: let it accept once more.
        socket.create_connection(("127.0.0.1", self._socket.port)).close()
        self._thread.join(timeout=5)
        self._socket.close()  # type: ignore[no-untyped-call]
