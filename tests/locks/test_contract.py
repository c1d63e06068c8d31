"""The LockBackend contract, run against every backend: the lock table on SQLite and on PostgreSQL,
and Hive Metastore locks over a real socket to a test double of the metastore's lock API."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, create_engine
from thriftpy2.rpc import make_client
from thriftpy2.thrift import TClient

from coordinator.commit.commit_point import commit_each
from coordinator.errors import CommitConflict, LockUnavailable
from coordinator.locks.base import Lease, LockBackend
from coordinator.locks.hive_metastore import HMS, HiveMetastoreLocks
from coordinator.locks.lock_table import LockTable
from coordinator.locks.renewal import LeaseKeeper
from coordinator.settings import Settings
from coordinator_client.models import CommitRequest
from tests.support.commits import append_commit
from tests.support.databases import fresh_database
from tests.support.hive_metastore_double import HiveMetastoreLockDouble
from tests.support.paimon_files import PaimonTable, create_table, pypaimon_rows
from tests.support.pause import PausedCall
from tests.support.served import LiveServer
from tests.support.waiting import wait_for

LEASE = 0.5


@dataclass
class Subject:
    """A backend under test, how another process reaches the same locks, and an engine whose
    connections stand for the caller's transaction at the commit point."""

    locks: LockBackend
    kind: str
    address: str
    engine: Engine


def hive_locks(uri: str) -> HiveMetastoreLocks:
    # Short check intervals: a waiter sees a released lock within a few milliseconds.
    return HiveMetastoreLocks(uri, lease_seconds=LEASE, min_check_interval=0.002, max_check_interval=0.02)


@pytest.fixture(params=["sqlite", "postgres", "hive"])
def subject(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Subject]:
    if request.param == "hive":
        with HiveMetastoreLockDouble(timeout_seconds=LEASE) as metastore:
            locks = hive_locks(metastore.uri)
            throwaway = create_engine(f"sqlite:///{tmp_path}/caller.db")
            yield Subject(locks, "hive", metastore.uri, throwaway)
            locks.close()
            throwaway.dispose()
        return
    url = fresh_database(request.param, request, tmp_path)
    engine = create_engine(url)
    yield Subject(LockTable(engine, lease_seconds=LEASE), "lock_table", url, engine)
    engine.dispose()


def still_held(subject: Subject, lease: Lease) -> bool:
    with subject.engine.begin() as conn:
        return subject.locks.still_held(conn, lease)


def test_a_held_lock_makes_others_wait_until_released(subject: Subject) -> None:
    locks = subject.locks
    lease = locks.acquire("table:db.t", "a", timeout_seconds=1)
    started = time.monotonic()
    with pytest.raises(LockUnavailable) as waited:
        locks.acquire("table:db.t", "b", timeout_seconds=0.2)
    assert 0.2 <= time.monotonic() - started < 1
    assert waited.value.retry_after_seconds >= 1
    locks.release(lease)
    assert locks.acquire("table:db.t", "b", timeout_seconds=1).epoch > lease.epoch


def test_a_stale_lease_releases_nothing(subject: Subject) -> None:
    locks = subject.locks
    lease = locks.acquire("t", "a", timeout_seconds=1)
    locks.release(Lease("t", "intruder", lease.epoch))
    locks.release(Lease("t", "a", lease.epoch + 7))
    assert [(h.owner, h.epoch) for h in locks.held()] == [("a", lease.epoch)]


def test_an_expired_lease_is_taken_over_and_the_old_holder_is_fenced(subject: Subject) -> None:
    locks = subject.locks
    old = locks.acquire("t", "a", timeout_seconds=1)
    time.sleep(LEASE + 0.1)
    new = locks.acquire("t", "b", timeout_seconds=1)
    assert new.epoch > old.epoch
    assert locks.renew(old) is False
    locks.release(old)  # a late release must not free the new holder's lock
    assert [(h.owner, h.epoch) for h in locks.held()] == [("b", new.epoch)]


def test_lease_keeper_keeps_a_long_holder(subject: Subject) -> None:
    locks = subject.locks
    lease = locks.acquire("t", "a", timeout_seconds=1)
    with LeaseKeeper(locks, lease, LEASE) as keeper:
        time.sleep(LEASE * 2.5)
        with pytest.raises(LockUnavailable):
            locks.acquire("t", "b", timeout_seconds=0.1)
    assert keeper.lost is False
    assert still_held(subject, lease)


def test_mutual_exclusion_under_contention(subject: Subject) -> None:
    locks = subject.locks
    inside = 0
    most = 0
    epochs: list[int] = []
    guard = threading.Lock()

    def worker(n: int) -> None:
        nonlocal inside, most
        for _ in range(10):
            lease = locks.acquire("hot", f"w{n}", timeout_seconds=30)
            with guard:
                inside += 1
                most = max(most, inside)
                epochs.append(lease.epoch)
            time.sleep(0.002)
            with guard:
                inside -= 1
            locks.release(lease)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(epochs) == 60
    assert most == 1
    assert epochs == sorted(set(epochs)), "every holder's epoch is above all earlier ones"


def test_try_acquire_returns_none_while_held(subject: Subject) -> None:
    locks = subject.locks
    lease = locks.acquire("t", "a", timeout_seconds=1)
    assert locks.try_acquire("t", "b") is None
    locks.release(lease)
    taken = locks.try_acquire("t", "b")
    assert taken is not None
    assert taken.epoch > lease.epoch


def test_still_held_until_the_lease_is_taken_over(subject: Subject) -> None:
    locks = subject.locks
    old = locks.acquire("t", "a", timeout_seconds=1)
    assert still_held(subject, old)
    time.sleep(LEASE + 0.1)
    new = locks.acquire("t", "b", timeout_seconds=1)
    assert not still_held(subject, old)
    assert still_held(subject, new)


def test_force_release_returns_the_holder_and_fences_it(subject: Subject) -> None:
    locks = subject.locks
    lease = locks.acquire("table:db.t", "a", timeout_seconds=1)
    released = locks.force_release("table:db.t")
    assert released is not None
    assert (released.lock_id, released.owner, released.epoch) == ("table:db.t", "a", lease.epoch)
    assert locks.renew(lease) is False
    assert not still_held(subject, lease)
    assert locks.acquire("table:db.t", "b", timeout_seconds=1).epoch > lease.epoch


def test_force_release_of_a_free_lock_returns_none(subject: Subject) -> None:
    assert subject.locks.force_release("table:db.t") is None


def test_held_lists_the_holder_with_its_lease(subject: Subject) -> None:
    locks = subject.locks
    table = locks.acquire("table:db.t", "a", timeout_seconds=1)
    other = locks.acquire("maintenance/db.t", "m", timeout_seconds=1)
    held = locks.held()
    assert [(h.lock_id, h.owner, h.epoch) for h in held] == [
        ("maintenance/db.t", "m", other.epoch),
        ("table:db.t", "a", table.epoch),
    ]
    for h in held:
        assert abs(h.expires_at_ms - h.acquired_at_ms - LEASE * 1000) <= 50


HOLDER = """
import sys, time
kind, address, lease = sys.argv[1], sys.argv[2], float(sys.argv[3])
if kind == "hive":
    from coordinator.locks.hive_metastore import HiveMetastoreLocks
    locks = HiveMetastoreLocks(address, lease_seconds=lease)
else:
    from sqlalchemy import create_engine
    from coordinator.locks.lock_table import LockTable
    locks = LockTable(create_engine(address), lease_seconds=lease)
lease = locks.acquire("table:db.x", "doomed", timeout_seconds=5)
print(lease.epoch, flush=True)
time.sleep(600)
"""


def test_a_killed_holder_loses_the_lock_after_its_lease(subject: Subject) -> None:
    argv = [sys.executable, "-c", HOLDER, subject.kind, subject.address, str(LEASE)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=os.environ.copy()) as holder:
        assert holder.stdout is not None
        doomed = int(holder.stdout.readline())
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        killed_at = time.monotonic()
        lease = subject.locks.acquire("table:db.x", "next", timeout_seconds=5)
        assert lease.epoch > doomed
        # Not before the dead holder's lease ran out (minus the time it took to kill it).
        assert time.monotonic() - killed_at > LEASE / 2


# Hive Metastore only: how the backend looks to the metastore and to Paimon jobs locking through it.


@pytest.fixture
def metastore() -> Iterator[HiveMetastoreLockDouble]:
    with HiveMetastoreLockDouble(timeout_seconds=LEASE) as double:
        yield double


@pytest.fixture
def hive(metastore: HiveMetastoreLockDouble) -> Iterator[HiveMetastoreLocks]:
    locks = hive_locks(metastore.uri)
    yield locks
    locks.close()


@pytest.fixture
def raw(metastore: HiveMetastoreLockDouble) -> Iterator[TClient]:
    """A plain Thrift client of the metastore, as a Paimon job's HiveCatalogLock uses it."""
    client = make_client(HMS.ThriftHiveMetastore, url=metastore.uri)
    yield client
    client.close()


def paimon_job_lock(raw: TClient, database: str, table: str) -> Any:
    """What HiveCatalogLock sends: an EXCLUSIVE table-level component, user and host, no agent info."""
    component = HMS.LockComponent(
        type=HMS.LockType.EXCLUSIVE, level=HMS.LockLevel.TABLE, dbname=database, tablename=table
    )
    return raw.lock(HMS.LockRequest(component=[component], user="flink", hostname="worker-7"))


def test_a_timed_out_acquire_withdraws_its_waiting_request(hive: HiveMetastoreLocks, raw: TClient) -> None:
    lease = hive.acquire("table:db.t", "a", timeout_seconds=1)
    with pytest.raises(LockUnavailable):
        hive.acquire("table:db.t", "b", timeout_seconds=0.2)
    assert hive.try_acquire("table:db.t", "c") is None
    shown = raw.show_locks(HMS.ShowLocksRequest()).locks
    assert [(e.lockid, e.state) for e in shown] == [(lease.epoch, HMS.LockState.ACQUIRED)]


def test_a_table_lock_is_the_metastore_lock_on_that_table(hive: HiveMetastoreLocks, raw: TClient) -> None:
    lease = hive.acquire("table:db.t", "coordinator-1", timeout_seconds=1)
    [element] = raw.show_locks(HMS.ShowLocksRequest(dbname="db", tablename="t")).locks
    assert (element.lockid, element.dbname, element.tablename, element.partname) == (
        lease.epoch,
        "db",
        "t",
        None,
    )
    assert (element.type, element.state) == (HMS.LockType.EXCLUSIVE, HMS.LockState.ACQUIRED)
    assert (element.agentInfo, element.user) == ("coordinator-1", "paimon-coordinator")
    # A Paimon job committing to the same table has to wait for the coordinator.
    assert paimon_job_lock(raw, "db", "t").state == HMS.LockState.WAITING


def test_a_paimon_job_holding_the_table_makes_the_coordinator_wait(
    hive: HiveMetastoreLocks, raw: TClient
) -> None:
    job = paimon_job_lock(raw, "db", "t")
    assert job.state == HMS.LockState.ACQUIRED
    with pytest.raises(LockUnavailable):
        hive.acquire("table:db.t", "coordinator-1", timeout_seconds=0.3)
    [held] = hive.held()
    assert (held.lock_id, held.owner, held.epoch) == ("table:db.t", "Unknown", job.lockid)
    raw.unlock(HMS.UnlockRequest(lockid=job.lockid))
    assert hive.acquire("table:db.t", "coordinator-1", timeout_seconds=1).epoch > job.lockid


def test_the_service_commits_under_hive_locks_and_fences_a_released_holder(
    settings: Settings, warehouse: Path
) -> None:
    """Configured with lock_backend=hive, commits take the metastore lock of their table: a Paimon job
    holding it makes a commit wait, and a holder force-released by an admin cannot publish."""
    with HiveMetastoreLockDouble(timeout_seconds=5) as metastore:
        hive = {"lock_backend": "hive", "hive_metastore_uri": metastore.uri, "hive_lock_timeout_seconds": 5}
        with (
            LiveServer(settings.model_copy(update=hive)) as server,
            httpx.Client(base_url=server.url, timeout=60) as http,
            closing(make_client(HMS.ThriftHiveMetastore, url=metastore.uri)) as raw,
        ):
            table = create_table(http, "db", "t", {"id": "BIGINT"})
            job = paimon_job_lock(raw, "db", "t")
            answers: list[int] = []

            def commit() -> None:
                answers.append(
                    http.post(f"/tables/{table.id}/commits", json=_append(table, "w", 1)).status_code
                )

            waiting = threading.Thread(target=commit)
            waiting.start()
            in_flight = wait_for(lambda: http.get("/commits").json()["inFlight"], "the commit in flight", 10)
            assert [(c["commitUser"], c["phase"]) for c in in_flight] == [("w", "lockWait")]
            time.sleep(0.3)
            assert answers == []  # the job's lock holds the commit back
            raw.unlock(HMS.UnlockRequest(lockid=job.lockid))
            waiting.join(timeout=30)
            assert answers == [201]

            services = server.services
            lock_id = f"table:{table.id}"
            # A commit takes the lock, writes its manifests and stalls before its commit point.
            late = CommitRequest.model_validate(_append(table, "z", 2))
            zombie = PausedCall(lambda: services.committer.commit(table.id, late), at=commit_each)
            zombie.start()
            [held] = services.locks.held()
            assert held.lock_id == lock_id
            released = http.post(f"/locks/{lock_id}/release").json()
            assert (released["released"], released["owner"], released["epoch"]) == (
                True,
                held.owner,
                held.epoch,
            )
            with pytest.raises(CommitConflict) as fenced:
                zombie.resume()
            assert fenced.value.conflict.type == "LOCK_LOST"
            assert pypaimon_rows(warehouse, table.id) == [{"id": 1}]
            assert not (table.path / "snapshot" / "snapshot-2").exists()


def _append(table: PaimonTable, user: str, row: int) -> dict[str, Any]:
    return append_commit(table, [{"id": row}], user=user)
