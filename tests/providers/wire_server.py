"""A fake provider on 127.0.0.1 that speaks HTTP: scripted responses, recorded requests.

A response is JSON (``body``), raw bytes (``raw``), or a server-sent event stream
(``events``, each a complete SSE event text), sent with chunked transfer encoding so a
stream can end properly, end early (``end_after``: the last chunk is sent, the rest is
not) or break off (``drop_after``: the connection closes without the last chunk, which
httpx sees as an incomplete body).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Canned", "WireServer", "sse"]


def sse(data: Any, event: str | None = None) -> str:
    """One SSE event: an optional ``event:`` line, the data (JSON unless a str), a blank line."""
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return head + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n"


class Canned:
    """One scripted response: status, JSON body (or raw bytes, or SSE events), headers,
    optional stall before answering (or, for a stream, before event ``stall_at``)."""

    def __init__(
        self,
        status: int = 200,
        body: Any = None,
        *,
        raw: bytes | None = None,
        events: list[str] | None = None,
        headers: dict[str, str] | None = None,
        stall: threading.Event | None = None,
        stall_at: int = 0,
        truncate_to: int | None = None,
        end_after: int | None = None,
        drop_after: int | None = None,
    ) -> None:
        self.status, self.body, self.raw, self.events = status, body, raw, events
        self.headers = headers or {}
        self.stall = stall
        self.stall_at = stall_at
        self.truncate_to = truncate_to
        self.end_after = end_after
        self.drop_after = drop_after


class WireServer:
    def __init__(self) -> None:
        self.responses: deque[Canned] = deque()
        self.requests: list[dict[str, Any]] = []
        #: Stalls that ended by their 10 s limit, not by the test releasing them (a test
        #: that waits on a stall asserts this stays empty: the stall cannot hide a bug).
        self.stalls_expired = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                canned = server.responses.popleft() if server.responses else Canned(500, {})
                if canned.events is not None:
                    try:
                        self._stream(canned)
                    except (BrokenPipeError, ConnectionResetError):
                        self.close_connection = True  # the client hung up: what a test wants
                    return
                if canned.stall is not None and not canned.stall.wait(10):
                    server.stalls_expired += 1
                payload = canned.raw if canned.raw is not None else json.dumps(canned.body).encode()
                self.send_response(canned.status)
                for key, value in canned.headers.items():
                    self.send_header(key, value)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(payload[: canned.truncate_to] if canned.truncate_to else payload)
                self.close_connection = True

            def _stream(self, canned: Canned) -> None:
                self.send_response(canned.status)
                for key, value in canned.headers.items():
                    self.send_header(key, value)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.send_header("connection", "close")
                self.end_headers()
                self.close_connection = True
                assert canned.events is not None
                for index, event in enumerate(canned.events):
                    if canned.stall is not None and index == canned.stall_at:
                        self.wfile.flush()
                        if not canned.stall.wait(10):
                            server.stalls_expired += 1
                    if index in (canned.end_after, canned.drop_after):
                        break
                    data = event.encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                if canned.drop_after is None:
                    self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

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
