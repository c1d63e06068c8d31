"""A real HTTP server on loopback that plays a webhook's receiver: it answers 500 to its first
`failures` deliveries (or to all, with None), 204 after, and keeps every request it got."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Delivery:
    headers: dict[str, str]
    body: bytes
    status: int


class WebhookReceiver:
    def __init__(self, failures: int | None) -> None:
        self.failures = failures
        self.deliveries: list[Delivery] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver._guard:
                    failing = receiver.failures is None or len(receiver.deliveries) < receiver.failures
                    status = 500 if failing else 204
                    receiver.deliveries.append(Delivery(dict(self.headers.items()), body, status))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass  # quiet: the test reads `deliveries`

        self._guard = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
