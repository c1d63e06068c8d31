"""LockBackend over the Hive Metastore's lock API, the lock Paimon's own HiveCatalogLock takes.

A commit on `table:<database>.<name>` locks the same EXCLUSIVE table-level component that a Paimon job
with `lock.type=hive` locks for that table, so the coordinator and such jobs exclude each other. The
metastore's lockid, unique and growing with every lock request, is the epoch. A lock lives as long as
it is heartbeated within the metastore's `hive.txn.timeout`, which is this backend's lease.

The lock is not in the metadata database, so still_held() cannot join the caller's transaction: it
only asks the metastore. What finally guards a commit is the compare-and-set of the table's snapshot
pointer in that same transaction; a holder that lost the lock between the check and its commit fails
there instead.
"""

from __future__ import annotations

import logging
import queue
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import thriftpy2
from sqlalchemy import Connection
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.thrift import TApplicationException, TClient
from thriftpy2.transport import TBufferedTransportFactory, TSocket, TTransportException

from coordinator.errors import LockUnavailable, Unavailable
from coordinator.locks.base import HeldLock, Lease

HMS = thriftpy2.load(
    str(Path(__file__).with_name("hive_metastore.thrift")), module_name="hive_metastore_thrift"
)
"""The metastore's lock calls and structs, wire-compatible with a real metastore."""

LOCK_DATABASE = "paimon_coordinator"
"""Where locks that are not table locks live in the metastore; the database need not exist."""
_LOCK_TABLE_PREFIX = "lock_"
_TABLE_LOCK_PREFIX = "table:"

log = logging.getLogger(__name__)

# Errors that leave a connection in an unknown state: drop it and retry on a new one.
_TRANSPORT_ERRORS = (TTransportException, OSError)

# Errors that arrive as complete replies: the connection can serve the next call.
_REPLIED_ERRORS = (
    TApplicationException,
    HMS.NoSuchLockException,
    HMS.NoSuchTxnException,
    HMS.TxnAbortedException,
    HMS.TxnOpenException,
    HMS.MetaException,
)
_LOCK_GONE = (HMS.NoSuchLockException, HMS.TxnAbortedException)


class MetastoreUnavailable(Unavailable):
    """The Hive Metastore could not be reached for a lock call, even after a few retries."""

    code = "METASTORE_UNAVAILABLE"


def component_of(lock_id: str) -> tuple[str, str]:
    """The (database, table) a lock id locks in the metastore.

    `table:<db>.<name>` is that table, as HiveCatalogLock locks it; the metastore folds names to lower
    case, so does this. Any other id becomes a hex-named table of LOCK_DATABASE, which maps back exactly.
    """
    if lock_id.startswith(_TABLE_LOCK_PREFIX):
        database, dot, name = lock_id.removeprefix(_TABLE_LOCK_PREFIX).partition(".")
        if dot and database and name:
            return database.lower(), name.lower()
    return LOCK_DATABASE, _LOCK_TABLE_PREFIX + lock_id.encode().hex()


def lock_id_of(database: str, table: str) -> str:
    """The inverse of component_of (table ids come back in lower case)."""
    if database == LOCK_DATABASE and table.startswith(_LOCK_TABLE_PREFIX):
        try:
            return bytes.fromhex(table.removeprefix(_LOCK_TABLE_PREFIX)).decode()
        except ValueError:
            pass  # a table someone else locked in that database
    return f"{_TABLE_LOCK_PREFIX}{database}.{table}"


class HiveMetastoreLocks:
    """LockBackend on a Hive Metastore (`thrift://host:9083`), following HiveCatalogLock's protocol:
    lock() an EXCLUSIVE table-level component, then poll check_lock with exponential backoff while
    the request is WAITING; a request still waiting at the timeout is unlocked.

    `lease_seconds` must be the metastore's hive.txn.timeout: the metastore drops a lock that was not
    heartbeated for that long, and LeaseKeeper heartbeats every third of it.
    """

    in_metadata_database = False

    def __init__(
        self,
        uri: str,
        *,
        lease_seconds: float,
        user: str = "paimon-coordinator",
        hostname: str | None = None,
        min_check_interval: float = 0.05,
        max_check_interval: float = 1.0,
        connect_timeout_seconds: float = 5.0,
        call_timeout_seconds: float = 30.0,
    ) -> None:
        address = urlsplit(uri)
        if address.scheme != "thrift" or not address.hostname:
            raise ValueError(f"not a metastore uri (thrift://host:port): {uri}")
        self._uri = uri
        self._host = address.hostname
        self._port = address.port or 9083
        self._lease_seconds = lease_seconds
        self._user = user
        self._hostname = hostname or socket.gethostname()
        self._min_check = min_check_interval
        # A waiting request is dropped by the metastore if not checked within the lease, like a held one.
        self._max_check = min(max_check_interval, lease_seconds / 3)
        self._connect_timeout_ms = int(connect_timeout_seconds * 1000)
        self._call_timeout_ms = int(call_timeout_seconds * 1000)
        # thriftpy2 clients serve one call at a time; each call borrows an idle one or opens a new one.
        self._idle: queue.SimpleQueue[TClient] = queue.SimpleQueue()

    def acquire(self, lock_id: str, owner: str, timeout_seconds: float) -> Lease:
        """Take the lock, polling a waiting request with backoff; raises LockUnavailable after the timeout."""
        lease = self._acquire(lock_id, owner, timeout_seconds)
        if lease is None:
            raise LockUnavailable(
                f"lock {lock_id} is held by another writer; gave up after {timeout_seconds:g}s",
                retry_after_seconds=max(1, round(self._lease_seconds / 4)),
            )
        return lease

    def wake_waiters(self, lock_id: str) -> None:
        """Never called: the metastore's locks are not released by a statement of the metadata database."""

    def holder_elsewhere(self, lock_id: str) -> str | None:
        """The metastore keeps no address of a lock's holder: commits wait for the lock instead."""
        return None

    def try_acquire(self, lock_id: str, owner: str) -> Lease | None:
        """One lock request; withdrawn at once unless granted."""
        return self._acquire(lock_id, owner, 0)

    def try_acquire_many(self, lock_ids: Sequence[str], owner: str) -> dict[str, Lease]:
        """One lock request each: the metastore takes no more than one lock in a call."""
        leases = {lock_id: self.try_acquire(lock_id, owner) for lock_id in lock_ids}
        return {lock_id: lease for lock_id, lease in leases.items() if lease is not None}

    def _acquire(self, lock_id: str, owner: str, timeout_seconds: float) -> Lease | None:
        deadline = time.monotonic() + timeout_seconds
        response = self._lock(lock_id, owner)
        pause = self._min_check
        try:
            while response.state == HMS.LockState.WAITING and (left := deadline - time.monotonic()) > 0:
                time.sleep(min(pause, left))
                pause = min(pause * 2, self._max_check)
                try:
                    response = self._call("check_lock", HMS.CheckLockRequest(lockid=response.lockid))
                except HMS.NoSuchLockException:
                    # We paused past the metastore's timeout and it dropped our request: queue again.
                    response = self._lock(lock_id, owner)
        finally:
            if response.state != HMS.LockState.ACQUIRED:
                self._withdraw(response.lockid)
        if response.state != HMS.LockState.ACQUIRED:
            return None
        return Lease(lock_id, owner, int(response.lockid))

    def _withdraw(self, lockid: int) -> None:
        """Unlock a request we stopped waiting for; if the metastore is unreachable it drops the
        request itself once the lease passes without a check."""
        try:
            self._unlock(lockid)
        except MetastoreUnavailable:
            log.warning("could not withdraw lock request %d; it will time out", lockid, exc_info=True)

    def _lock(self, lock_id: str, owner: str) -> Any:
        database, table = component_of(lock_id)
        component = HMS.LockComponent(
            type=HMS.LockType.EXCLUSIVE, level=HMS.LockLevel.TABLE, dbname=database, tablename=table
        )
        request = HMS.LockRequest(
            component=[component], user=self._user, hostname=self._hostname, agentInfo=owner
        )
        return self._call("lock", request)

    def renew(self, lease: Lease) -> bool:
        """Heartbeat the lock; False once the metastore dropped it (timed out or force-released)."""
        try:
            self._call("heartbeat", HMS.HeartbeatRequest(lockid=lease.epoch))
        except _LOCK_GONE:
            return False
        return self._acquired(lease)

    def still_held(self, conn: Connection, lease: Lease) -> bool:
        """Whether the metastore still grants our lockid. `conn` is not used: the lock lives elsewhere,
        and the pointer compare-and-set in that transaction is what guards the commit."""
        return self._acquired(lease)

    def _acquired(self, lease: Lease) -> bool:
        try:
            response = self._call("check_lock", HMS.CheckLockRequest(lockid=lease.epoch))
        except _LOCK_GONE:
            return False
        return bool(response.state == HMS.LockState.ACQUIRED)

    def release(self, lease: Lease) -> None:
        """Unlock if that lockid is this lease's lock and owner; lockids are never reused, so an old
        lease cannot free a newer holder, and a wrong one cannot free someone else's lock."""
        if any(e.lockid == lease.epoch and e.agentInfo == lease.owner for e in self._show(lease.lock_id)):
            self._unlock(lease.epoch)

    def release_in(self, conn: Connection, lease: Lease) -> None:
        """The metastore cannot join the caller's transaction: release at once."""
        self.release(lease)

    def force_release(self, lock_id: str) -> HeldLock | None:
        """Unlock whoever holds the lock, a Paimon job included; its heartbeats and checks then fail."""
        for element in self._show(lock_id):
            if element.state == HMS.LockState.ACQUIRED and self._unlock(element.lockid):
                return self._held(element)
        return None

    def held(self) -> list[HeldLock]:
        """Table-level locks the metastore grants, foreign ones (Paimon jobs, Hive) included."""
        response = self._call("show_locks", HMS.ShowLocksRequest())
        return sorted(
            (
                self._held(e)
                for e in response.locks or []
                if e.state == HMS.LockState.ACQUIRED and e.tablename and not e.partname
            ),
            key=lambda h: h.lock_id,
        )

    def now_ms(self) -> int:
        """This process's clock: the lock calls expose none of the metastore's but its timestamps, so
        held() times are off by the clock skew between the two."""
        return int(time.time() * 1000)

    def _held(self, element: Any) -> HeldLock:
        heartbeat = int(element.lastheartbeat)
        return HeldLock(
            lock_id=lock_id_of(element.dbname, element.tablename),
            owner=element.agentInfo or f"{element.user}@{element.hostname}",
            epoch=int(element.lockid),
            acquired_at_ms=int(element.acquiredat or heartbeat),
            expires_at_ms=heartbeat + int(self._lease_seconds * 1000),
        )

    def _show(self, lock_id: str) -> list[Any]:
        """The metastore's table-level lock requests on the component of lock_id."""
        database, table = component_of(lock_id)
        response = self._call("show_locks", HMS.ShowLocksRequest(dbname=database, tablename=table))
        return [
            e for e in response.locks or [] if (e.dbname, e.tablename) == (database, table) and not e.partname
        ]

    def _unlock(self, lockid: int) -> bool:
        """Unlock; False if the metastore no longer knows the lock."""
        try:
            self._call("unlock", HMS.UnlockRequest(lockid=lockid))
        except HMS.NoSuchLockException:
            return False
        return True

    def _call(self, method: str, request: Any) -> Any:
        """One metastore call; transport failures are retried on fresh connections, then reported.

        A retried lock() whose first attempt did reach the metastore leaves a request nobody
        heartbeats; the metastore drops it after the lease.
        """
        attempts = Retrying(
            stop=stop_after_attempt(3),
            wait=wait_exponential(multiplier=0.05, max=0.5),
            retry=retry_if_exception_type(_TRANSPORT_ERRORS),
            reraise=True,
        )
        try:
            for attempt in attempts:
                with attempt:
                    return self._call_once(method, request)
        except _TRANSPORT_ERRORS as e:
            raise MetastoreUnavailable(
                f"Hive Metastore {self._uri} failed on {method}: {e}", retry_after_seconds=2
            ) from e
        raise AssertionError("unreachable: tenacity either returns or reraises")

    def _call_once(self, method: str, request: Any) -> Any:
        try:
            client = self._idle.get_nowait()
        except queue.Empty:
            client = self._connect()
        try:
            result = getattr(client, method)(request)
        except _REPLIED_ERRORS:
            self._idle.put(client)
            raise
        except _TRANSPORT_ERRORS:
            client.close()
            self.close()  # the metastore went away: the other idle connections are as dead as this one
            raise
        except BaseException:
            client.close()
            raise
        self._idle.put(client)
        return result

    def _connect(self) -> TClient:
        """A binary protocol over a buffered, unframed socket: the metastore's default transport.

        Built by hand rather than with make_client, which has a single timeout for connecting and for
        calls; thriftpy2's transport classes carry no annotations, hence the ignores.
        """
        sock = TSocket(  # type: ignore[no-untyped-call]
            self._host,
            self._port,
            connect_timeout=self._connect_timeout_ms,
            socket_timeout=self._call_timeout_ms,
        )
        transport = TBufferedTransportFactory().get_transport(sock)  # type: ignore[no-untyped-call]
        transport.open()
        protocol = TBinaryProtocolFactory().get_protocol(transport)  # type: ignore[no-untyped-call]
        return TClient(HMS.ThriftHiveMetastore, protocol)

    def close(self) -> None:
        """Close the idle connections."""
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return
