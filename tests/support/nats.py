"""A real nats-server with JetStream (Debian's, installed by .ci/services.sh), in a process of its own on
a free loopback port with a store in a temporary folder; stoppable and restartable on the same port and
store, as an outage is. And a reader of what its stream holds."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.support.processes import stop_process
from tests.support.served import free_port


class NatsServer:
    def __init__(self, store: Path, log: Path) -> None:
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self._store = store
        self._log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> NatsServer:
        sink = self._log.open("ab")
        self.process = subprocess.Popen(
            ["nats-server", "-js", "-a", "127.0.0.1", "-p", str(self.port), "-sd", str(self._store)],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        sink.close()
        deadline = time.monotonic() + 20
        while True:
            assert self.process.poll() is None, f"nats-server exited: {self._log.read_text()[-2000:]}"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                assert time.monotonic() < deadline, "nats-server did not listen"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)
            self.process = None

    def __enter__(self) -> NatsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stream_messages(url: str, stream: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Every message the stream holds, in stream order: (subject, Nats-Msg-Id, the event)."""

    async def read() -> list[tuple[str, str, dict[str, Any]]]:
        import nats

        nc = await nats.connect(url)
        try:
            js = nc.jetstream()
            info = await js.stream_info(stream)
            held = []
            for seq in range(info.state.first_seq, info.state.last_seq + 1):
                msg = await js.get_msg(stream, seq)
                msg_id = (msg.headers or {}).get("Nats-Msg-Id", "")
                held.append((str(msg.subject), str(msg_id), json.loads(msg.data or b"{}")))
            return held
        finally:
            await nc.close()

    return asyncio.run(read())
