"""A fake provider on 127.0.0.1 that speaks HTTP: scripted responses, recorded requests."""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Canned", "WireServer"]


class Canned:
    """One scripted response: status, JSON body (or raw bytes), headers, optional stall."""

    def __init__(
        self,
        status: int = 200,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
        stall: threading.Event | None = None,
        truncate_to: int | None = None,
    ) -> None:
        self.status, self.body, self.raw = status, body, raw
        self.headers = headers or {}
        self.stall = stall
        self.truncate_to = truncate_to


class WireServer:
    def __init__(self) -> None:
        self.responses: deque[Canned] = deque()
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                canned = server.responses.popleft() if server.responses else Canned(500, {})
                if canned.stall is not None:
                    canned.stall.wait(10)
                payload = canned.raw if canned.raw is not None else json.dumps(canned.body).encode()
                self.send_response(canned.status)
                for key, value in canned.headers.items():
                    self.send_header(key, value)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload[: canned.truncate_to] if canned.truncate_to else payload)

            def log_message(self, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> WireServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
