"""A command running inside a sandbox container (``docker exec``).

The command runs under a small ``sh`` wrapper, which docker makes a session leader:

- it writes its pid (= the process group id) to a file in /tmp, so a timeout, ``kill`` or
  ``signal`` reaches the whole group through another exec;
- it runs the command as a child, reports the exit code on stderr behind a random
  marker, then kills its own group: what the command left running dies with it, and the
  output stream ends.

Output frames are read by one thread per run (a run may last for half an hour; the shared
executor is kept for short calls) and fed into the run's :class:`OutputBuffer`.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

from docker.utils.socket import frames_iter

from clawlog.events.domain.workspace import ProcessHost
from clawlog.events.logging import get_logger

from ..exec.output import OutputBuffer

__all__ = ["SandboxProcess", "wrapped_command"]

_log = get_logger(__name__)
_WRAPPER = 'echo $$ >"$1"; sh -c "$2"; code=$?; printf "%s%d\\n" "$3" "$code" >&2; kill -KILL -$$'
_STDERR = 2


def wrapped_command(command: str) -> tuple[list[str], str, bytes]:
    """(argv for the exec, the pid file, the exit-code marker)."""
    token = secrets.token_hex(8)
    pidfile = f"/tmp/.clawlog-{token}.pid"
    marker = f"\x1eclawlog-exit-{token}:"
    return ["sh", "-c", _WRAPPER, "clawlog", pidfile, command, marker], pidfile, marker.encode()


class SandboxProcess:
    host: ProcessHost = "sandbox"

    def __init__(
        self,
        *,
        sock: Any,
        marker: bytes,
        pidfile: str,
        loop: asyncio.AbstractEventLoop,
        exit_code: Callable[[], int | None],
        run_in_container: Callable[[list[str]], Any],
        kill_container: Callable[[], Any],
        stdin: bool = False,
    ) -> None:
        self._sock = sock
        self._stdin = stdin
        self._killed = False
        self._marker = marker
        self._pidfile = pidfile
        self._loop = loop
        self._exit_code = exit_code
        self._run_in_container = run_in_container
        self._kill_container = kill_container
        self.output = OutputBuffer()
        self.output.bind(loop)
        self._done: asyncio.Future[int] = loop.create_future()
        self._thread = threading.Thread(target=self._pump, name="clawlog-sandbox-exec", daemon=True)
        self._thread.start()

    # -- the reader thread --------------------------------------------------------------
    def _pump(self) -> None:
        code: int | None = None
        try:
            for stream, data in frames_iter(self._sock, tty=False):
                if stream == _STDERR and self._marker in data:
                    before, _, after = data.partition(self._marker)
                    self.output.feed(before)
                    digits = after.split(b"\n", 1)[0]
                    code = int(digits) if digits.lstrip(b"-").isdigit() else None
                else:
                    self.output.feed(data)
        except Exception as exc:  # the stream broke: the exec's own status decides
            _log.warning("sandbox output stream failed", error=repr(exc)[:300])
        finally:
            self.output.close()
            self._close_socket()
        if code is None:
            code = self._engine_exit_code()
        self._loop.call_soon_threadsafe(self._set_done, code)

    def _close_socket(self) -> None:
        # SocketIO.close() leaves the socket it wraps open
        for closable in (getattr(self._sock, "_sock", None), self._sock):
            with contextlib.suppress(Exception):
                if closable is not None:
                    closable.close()

    def _engine_exit_code(self) -> int:
        """No marker: the wrapper itself died (killed, signalled, out of memory). The
        engine has the exec's status by the time its stream ends."""
        with contextlib.suppress(Exception):
            found = self._exit_code()
            if found is not None:
                return found
        return 128 + signal.SIGKILL if self._killed else -1

    def _set_done(self, code: int) -> None:
        if not self._done.done():
            self._done.set_result(code)

    # -- RunningProcess -----------------------------------------------------------------
    @property
    def returncode(self) -> int | None:
        return self._done.result() if self._done.done() else None

    async def wait(self) -> int:
        return await asyncio.shield(self._done)

    async def signal(self, sig: signal.Signals) -> None:
        if not self._done.done():
            await self._group_signal(sig.name.removeprefix("SIG"))

    async def kill(self) -> None:
        self._killed = True
        if not self._done.done() and not await self._group_signal("KILL"):
            await self._kill_container()
        await self.wait()

    async def _group_signal(self, name: str) -> bool:
        script = 'pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] && kill -s "$2" "-$pid"'
        result = await self._run_in_container(["sh", "-c", script, "clawlog", self._pidfile, name])
        return getattr(result, "exit_code", 1) == 0

    async def write(self, text: str, eof: bool = False) -> None:
        raw = getattr(self._sock, "_sock", None)
        if raw is None or not self._stdin:
            raise RuntimeError("this sandboxed process has no standard input")
        data = text.encode()
        await self._loop.run_in_executor(None, self._send, raw, data, eof)

    @staticmethod
    def _send(raw: socket.socket, data: bytes, eof: bool) -> None:
        if data:
            raw.sendall(data)
        if eof:
            raw.shutdown(socket.SHUT_WR)
