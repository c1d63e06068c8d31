"""`coordinator serve --workers N`: N worker processes serving one address, supervised by the parent.

One Python process commits on one core (the GIL). Workers are replicas on one host: each has its own
instance identity, caches and lock threads, the lock table arbitrates between them, and a commit to a
table whose lock another worker holds is forwarded to that worker (api/forwarding.py), which commits it
with its own group.

The parent migrates the database once, then starts the workers (multiprocessing's spawn context) and
does not serve HTTP itself. Each worker listens on (host, port) with SO_REUSEPORT, so the kernel spreads
the connections over the workers, and on a private port of its own, which it advertises to its siblings
as its advertise_url. A worker that exits is started again after a short backoff; SIGTERM or SIGINT to
the parent stops every worker (SIGTERM, then SIGKILL after STOP_TIMEOUT_SECONDS) and the parent exits 0.
A worker dies with the parent (Linux's parent-death signal, else a thread watching the parent's pid).

Metrics: the parent points PROMETHEUS_MULTIPROC_DIR at a fresh folder before the workers start, so
every worker's counters land there and GET /metrics on any worker sums them (observability/metrics.py).
"""

from __future__ import annotations

import ctypes
import ipaddress
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from types import FrameType
from urllib.parse import urlsplit

from coordinator.settings import Settings

log = logging.getLogger(__name__)

METRICS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
STOP_TIMEOUT_SECONDS = 30.0
"""How long stopping waits for the workers to finish their requests before it kills them."""
FIRST_BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 30.0
STEADY_SECONDS = 30.0
"""A worker that ran this long before it exited is restarted after the first backoff again."""
WATCH_SECONDS = 0.2
_PR_SET_PDEATHSIG = 1


def serve_workers(settings: Settings) -> int:
    """Run `settings.workers` workers until SIGTERM or SIGINT; 0 when they were stopped, 1 when the
    address cannot be bound."""
    from coordinator.db.migrate import upgrade

    problem = _bind_problem(settings.host, settings.port)
    if problem is not None:
        log.error("cannot serve on %s:%d: %s", settings.host, settings.port, problem)
        return 1
    if settings.auto_migrate:
        upgrade(settings.database_url)
    metrics_dir = tempfile.mkdtemp(prefix="coordinator-metrics-")
    os.environ[METRICS_DIR_VARIABLE] = metrics_dir
    try:
        return Supervisor(settings.model_copy(update={"auto_migrate": False}), metrics_dir).run()
    finally:
        os.environ.pop(METRICS_DIR_VARIABLE, None)
        shutil.rmtree(metrics_dir, ignore_errors=True)


@dataclass
class _Slot:
    """One worker's place: the process now filling it, and when to start the next one."""

    index: int
    process: BaseProcess | None = None
    started_at: float = 0.0
    failures: int = 0
    restart_at: float = 0.0
    pids: list[int] = field(default_factory=list)


class Supervisor:
    """Starts the workers, restarts those that exit, stops them all on SIGTERM or SIGINT."""

    def __init__(self, settings: Settings, metrics_dir: str) -> None:
        self._settings = settings
        self._metrics_dir = metrics_dir
        self._context = multiprocessing.get_context("spawn")
        self._slots = [_Slot(i) for i in range(settings.workers)]
        self._stop = threading.Event()

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            for slot in self._slots:
                self._start(slot)
            while not self._stop.is_set():
                self._watch()
                self._stop.wait(WATCH_SECONDS)
        finally:
            self._stop_all()  # after a failure of the supervisor's own too: no worker is left behind
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return 0

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if not self._stop.is_set():
            log.info("%s: stopping %d workers", signal.Signals(signum).name, len(self._slots))
        self._stop.set()

    def _start(self, slot: _Slot) -> None:
        process = self._context.Process(
            target=run_worker,
            args=(self._settings, slot.index, os.getpid()),
            name=f"coordinator-worker-{slot.index}",
        )
        process.start()
        slot.process, slot.started_at = process, time.monotonic()
        assert process.pid is not None
        slot.pids.append(process.pid)
        log.info("worker %d started: pid %d", slot.index, process.pid)

    def _watch(self) -> None:
        """Restart the workers that exited, each after its backoff."""
        now = time.monotonic()
        for slot in self._slots:
            process = slot.process
            if process is not None and process.exitcode is not None:
                pid, code = process.pid, process.exitcode
                self._forget(process)
                slot.process = None
                ran = now - slot.started_at
                slot.failures = 1 if ran >= STEADY_SECONDS else slot.failures + 1
                backoff = min(FIRST_BACKOFF_SECONDS * 2 ** (slot.failures - 1), MAX_BACKOFF_SECONDS)
                slot.restart_at = now + backoff
                log.warning(
                    "worker %d (pid %s) exited with code %s after %.1fs; restarting it in %.1fs",
                    slot.index,
                    pid,
                    code,
                    ran,
                    backoff,
                )
            if slot.process is None and now >= slot.restart_at:
                self._start(slot)

    def _forget(self, process: BaseProcess) -> None:
        """Drop a dead worker's live gauges; its counters keep counting in the sums."""
        from prometheus_client import multiprocess

        if process.pid is not None:
            multiprocess.mark_process_dead(process.pid, self._metrics_dir)  # type: ignore[no-untyped-call]
        process.close()

    def _stop_all(self) -> None:
        running = [s.process for s in self._slots if s.process is not None and s.process.exitcode is None]
        for process in running:
            if process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        for process in running:
            process.join(max(0.0, deadline - time.monotonic()))
        for process in running:
            if process.exitcode is None:
                log.warning(
                    "worker pid %s did not stop within %.0fs: killed", process.pid, STOP_TIMEOUT_SECONDS
                )
                process.kill()
                process.join()
        for slot in self._slots:
            if slot.process is not None:
                self._forget(slot.process)
                slot.process = None
        log.info("all workers stopped")


def run_worker(settings: Settings, index: int, parent: int) -> None:
    """A worker's process: both sockets, then uvicorn until SIGTERM (the parent's stop) or SIGINT."""
    _die_with(parent)
    import uvicorn

    from coordinator.app import create_app
    from coordinator.observability.logs import configure_logging

    configure_logging(settings.log_format)
    public = listening_socket(settings.host, settings.port, reuse_port=True)
    private = listening_socket(settings.host, 0, reuse_port=False)
    own_url = private_url(settings, private.getsockname()[1])
    log.info(
        "worker %d (pid %d) serving on %s:%d, advertising %s",
        index,
        os.getpid(),
        settings.host,
        settings.port,
        own_url,
    )
    worker_settings = settings.model_copy(update={"advertise_url": own_url, "auto_migrate": False})
    config = uvicorn.Config(
        create_app(worker_settings, serving=True),
        host=settings.host,
        port=settings.port,
        log_config=None,  # keep our handlers: uvicorn's own lines come out in the same format
        access_log=False,  # RequestContext writes one access line per request, with its request id
    )
    uvicorn.Server(config).run(sockets=[public, private])


def private_url(settings: Settings, port: int) -> str:
    """Where the siblings reach this worker: the user's advertise_url's scheme and host with the private
    port, or http on loopback (or on the bind address, when that is neither loopback nor a wildcard)."""
    if settings.advertise_url is not None:
        given = urlsplit(settings.advertise_url)
        host = given.hostname or "127.0.0.1"
        return f"{given.scheme}://{_url_host(host)}:{port}"
    host = settings.host
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return f"http://{_url_host(host)}:{port}"  # a name: the siblings resolve it as the bind did
    if address.is_unspecified or address.is_loopback:
        return f"http://127.0.0.1:{port}" if address.version == 4 else f"http://[::1]:{port}"
    return f"http://{_url_host(host)}:{port}"


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def listening_socket(host: str, port: int, *, reuse_port: bool) -> socket.socket:
    """A TCP socket listening on (host, port); with `reuse_port`, one of a group sharing the port."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(address)
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _bind_problem(host: str, port: int) -> str | None:
    """Why the workers could not bind (host, port) with SO_REUSEPORT (another server holds it), or None."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            probe.bind(address)
    except OSError as error:
        return str(error)
    return None


def _die_with(parent: int) -> None:
    """End this process when `parent` ends, SIGKILLed too: Linux's parent-death signal, or elsewhere a
    thread watching the parent's pid."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    else:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="parent-watch").start()
    if os.getppid() != parent:  # it ended before the signal was asked for
        os._exit(1)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)
