"""Engine creation and the database clock, per dialect."""

from __future__ import annotations

import select
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.sql.elements import TextClause

IDLE_PING_SECONDS = 1.0
"""A pooled PostgreSQL connection unused for longer than this is pinged before it is handed out (see
`_checked_before_use`), for a server gone without a word (a failover to another host answers only when
written to) that took longer than this; one a restart broke shows it sooner (its socket is readable).
A connection in steady use is never pinged."""
_IDLE_SINCE = "coordinator_idle_since"

_NOW_MS = {
    "postgresql": "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
    "sqlite": "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
    "mysql": "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
    "mariadb": "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
}


def now_ms(engine: Engine) -> TextClause:
    """SQL for the database clock in epoch millis: leases never depend on the replicas' clocks."""
    return text(_NOW_MS[engine.dialect.name])


@contextmanager
def autocommit(engine: Engine) -> Iterator[Connection]:
    """A connection for single-statement writes: on PostgreSQL each statement commits on its own, saving
    the BEGIN and COMMIT round trips; elsewhere one ordinary transaction, committed at exit."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")
    else:
        with engine.begin() as conn:
            yield conn


def count_round_trips(engine: Engine, count: Callable[[], None]) -> None:
    """Call `count` on every round trip `engine` makes: each statement, and the BEGIN and the COMMIT or
    ROLLBACK of a transaction not in autocommit (psycopg sends each of those on its own)."""

    def statement(*_args: Any) -> None:
        count()

    def transaction_edge(conn: Connection, *_args: Any) -> None:
        if conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
            count()

    event.listen(engine, "before_cursor_execute", statement)
    for edge in ("begin", "commit", "rollback"):
        event.listen(engine, edge, transaction_edge)


def read_only(engine: Engine) -> Connection:
    """A connection for a few reads: on PostgreSQL in autocommit, saving the BEGIN and ROLLBACK trips."""
    conn = engine.connect()
    if engine.dialect.name == "postgresql":
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
    return conn


def make_engine(url: str, statement_timeout_seconds: float = 0) -> Engine:
    """An engine tuned for many short transactions from many threads; on PostgreSQL each of its statements
    (and those of the engines made from it here) is cancelled after `statement_timeout_seconds` (0: never).
    SQLite has no such limit: its one writer at a time waits at most its busy timeout."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30}, pool_size=8, max_overflow=16
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin_immediate)
        return engine
    # No pre-ping: it would add a round trip to every transaction of a commit (see _checked_before_use).
    # A connection beyond the pool's size is closed when it comes back, and a new PostgreSQL session
    # costs the server about 4 ms of CPU (bench/README.md, the streaming load): the pool keeps as many
    # as a busy process uses at once.
    if statement_timeout_seconds > 0:
        parsed = _with_session_setting(parsed, f"statement_timeout={round(statement_timeout_seconds * 1000)}")
    _convert_long_statements_once()
    return _checked_before_use(create_engine(parsed, pool_size=16, max_overflow=24, pool_recycle=1800))


_LONGEST_STATEMENT = 32_768
"""The commit point's one statement (db/repositories/one_statement.py) is a few kilobytes of SQL."""


def _convert_long_statements_once() -> None:
    """Let psycopg keep its conversion of our longest statements too. psycopg turns a query's named
    placeholders into PostgreSQL's $n on every execute and remembers the result only for queries of at
    most 4,096 characters; parsing the commit point's statement again for every commit was 6% of a
    spread commit's CPU. The limit is a module constant of psycopg's, read at every execute; a psycopg
    without it keeps its own behaviour."""
    from psycopg import _queries

    if getattr(_queries, "MAX_CACHED_STATEMENT_LENGTH", _LONGEST_STATEMENT) < _LONGEST_STATEMENT:
        _queries.MAX_CACHED_STATEMENT_LENGTH = _LONGEST_STATEMENT


def _with_session_setting(url: URL, setting: str) -> URL:
    """`url` whose sessions start with `setting` too, beside the `options` it may carry already. In the URL
    (libpq's `options` parameter), so that the engines made from this one's URL inherit it."""
    options = " ".join(filter(None, [url.query.get("options"), f"-c {setting}"]))  # type: ignore[list-item]
    return url.update_query_dict({"options": options})


def bookkeeping_engine(engine: Engine) -> Engine:
    """The engine for writes whose loss in a database crash is harmless; on PostgreSQL its sessions commit
    without waiting for the WAL flush (a commit that does wait flushes everything before it anyway).

    That is lock bookkeeping (the commit point re-checks owner and epoch durably, and owners are unique
    per attempt), publish marks (publishing again is idempotent), the final phase timings of committed
    commits, and the history rows of rejected commits (their writers already have the answer; a lost row
    only means a resend is judged afresh). The commit point itself uses the durable engine. Elsewhere
    this is `engine` itself: SQLite in WAL mode with synchronous=NORMAL does not flush per commit anyway.
    """
    return _postgres_sessions_with(engine, "synchronous_commit=off")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers run beside the one writer; autocommit off is driven by our BEGIN below.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _sqlite_begin_immediate(connection: Any) -> None:
    # Take the write lock at BEGIN so two writers never deadlock upgrading a read lock.
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def probe_engine(engine: Engine) -> Engine:
    """The engine for the live-file index's probes at the start of a commit (usecases.live_index).

    On PostgreSQL its sessions plan index scans only (`live_files.prefer_index` says why), so that a
    probe is one statement in autocommit instead of BEGIN, SET LOCAL, the probe and COMMIT: three round
    trips fewer on every commit. Elsewhere this is `engine` itself.
    """
    return _postgres_sessions_with(engine, "enable_seqscan=off")


def _postgres_sessions_with(engine: Engine, setting: str) -> Engine:
    """A small pool of its own whose PostgreSQL sessions start with `setting`; elsewhere `engine`."""
    if engine.dialect.name != "postgresql":
        return engine
    return _checked_before_use(
        create_engine(
            _with_session_setting(engine.url, setting),
            pool_size=8,
            max_overflow=12,
            pool_recycle=1800,
        )
    )


def _checked_before_use(engine: Engine) -> Engine:
    """`engine`, whose pool checks a PostgreSQL connection before handing it out when it may be broken,
    and replaces it when it is: the first transactions after a database restart then succeed.

    A restarted (or crashed, or shut down) server ends every session: its backends send a FATAL and
    close their sockets, so a broken idle connection has something to read, which one poll() without
    a timeout sees. Such a connection, and one idle longer than IDLE_PING_SECONDS (whose server may
    be gone without a word: a failover to another host answers only when written to), gets a ping
    (an empty statement, one round trip); if that fails, the pool connects anew and checks again,
    and a database still down raises OperationalError (a 503, api/database_errors.py). A connection
    in use every moment costs one poll(), a few microseconds: `pool_pre_ping` would cost every
    checkout a round trip, and a commit checks out connections several times. The first statement
    that still finds its connection gone (a disconnect) makes SQLAlchemy replace every connection
    the pool held before it.
    """
    dialect = engine.dialect

    def idle_from_now(_dbapi_connection: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    def check(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle = time.monotonic() - record.info.get(_IDLE_SINCE, 0.0)
        if idle <= IDLE_PING_SECONDS and not _has_input(dbapi_connection):
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as lost:
            raise DisconnectionError(f"pooled connection lost: {lost}") from lost

    event.listen(engine, "connect", idle_from_now)
    event.listen(engine, "checkin", idle_from_now)
    event.listen(engine, "checkout", check)
    return engine


def _has_input(dbapi_connection: Any) -> bool:
    """Whether an idle connection's socket is readable (the server wrote or closed it) or unusable."""
    try:
        poller = select.poll()
        poller.register(dbapi_connection.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except Exception:  # closed, or no socket: let the ping tell
        return True
