"""CPU seconds from /proc: of one process (the service), and of a local PostgreSQL server as a whole.

The server's figure counts every process of it, the ones that exited meanwhile too: when a backend ends,
the postmaster reaps it and the kernel adds the backend's CPU to the postmaster's `cutime` and `cstime`.
So the difference of two readings is exact for the whole server, whatever connections came and went; it
also holds whatever other databases of the same server did meanwhile.
"""

from __future__ import annotations

import os

from sqlalchemy import create_engine, text

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (field 3 of proc(5) is index 0)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid`, all its threads."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (proc(5) fields 14 and 15)


def process_tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` and all its descendants (a `coordinator serve --workers`
    parent and its workers): each live one's own, plus what its children that ended and were reaped
    used (`cutime`, `cstime`: a worker that was restarted). For a process without children this is
    process_cpu_seconds(pid)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(_stat(int(entry))[1])
            except OSError:  # gone meanwhile
                continue
    tree, frontier = [pid], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        tree += frontier
    ticks = 0
    for member in tree:
        try:
            ticks += sum(int(x) for x in _stat(member)[11:15])  # utime, stime, cutime, cstime
        except OSError:
            if member == pid:
                raise
            continue  # ended between the two reads: counted in its parent's cutime once reaped
    return ticks / CLOCK_TICKS


def postmaster_pid(database_url: str) -> int | None:
    """The pid of the PostgreSQL server behind `database_url` when it runs on this machine, else None.

    Its processes run in its data directory: the postmaster is the one of them whose parent is not.
    """
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            data_directory = os.path.realpath(str(conn.execute(text("SHOW data_directory")).scalar_one()))
    finally:
        engine.dispose()
    members: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.path.realpath(f"/proc/{entry}/cwd") == data_directory:
                members[int(entry)] = int(_stat(int(entry))[1])
        except OSError:  # gone meanwhile, or not ours to look at
            continue
    roots = [pid for pid, parent in members.items() if parent not in members]
    return roots[0] if len(roots) == 1 else None


def server_cpu_seconds(postmaster: int) -> float:
    """CPU seconds of the whole server: the postmaster, its live children, and its children that ended."""
    fields = _stat(postmaster)
    ticks = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    with open(f"/proc/{postmaster}/task/{postmaster}/children") as f:
        children = [int(pid) for pid in f.read().split()]
    for child in children:
        try:
            ticks += sum(int(x) for x in _stat(child)[11:13])
        except OSError:  # ended between the two reads: it is not in the postmaster's cutime yet either
            continue
    return ticks / CLOCK_TICKS
