"""Commands on this machine: ``sh -c`` in a new session (its own process group), output
merged and streamed into an :class:`OutputBuffer`.

Killing kills the group and every descendant found under the leader in ``/proc`` (a
child that called ``setsid`` left the group but not the tree). When the leader exits,
what it left running in its group is killed too: a foreground command never leaves
orphans behind (``background`` runs are for long-lived work).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping

import structlog

from .output import OutputBuffer

__all__ = ["HostProcess", "group_members", "kill_tree"]

_log = structlog.get_logger("clawlog.tools.exec")
#: After the leader exits, how long its output may still take to arrive.
_DRAIN_S = 2.0
#: How long killed processes may take to die (SIGKILL takes milliseconds).
_KILL_WAIT_S = 5.0


def _proc_table() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, pgid) of every process."""
    table: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                raw = handle.read()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), int(fields[2]))
    return table


def group_members(pgid: int) -> list[int]:
    """Live or zombie processes of process group ``pgid``."""
    return [pid for pid, (_, group) in _proc_table().items() if group == pgid]


def _tree(leader: int, descendants: bool = True) -> set[int]:
    """The members of ``leader``'s process group, and its descendants."""
    table = _proc_table()
    members = {pid for pid, (_, group) in table.items() if group == leader}
    if not descendants:
        return members
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = set(), [leader]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found | members


async def kill_tree(
    leader: int, sig: signal.Signals = signal.SIGKILL, *, descendants: bool = True
) -> None:
    """Send ``sig`` to the group of ``leader`` and to every descendant of it; for SIGKILL,
    return once they have all died (pidfds tell, no polling). Once the leader has been
    reaped its pid may be reused: then pass ``descendants=False`` (its group id stays
    reserved while any member lives, a parent-child walk from its pid does not)."""
    victims = _tree(leader, descendants) | ({leader} if descendants else set())
    pidfds = []
    for pid in victims:
        with contextlib.suppress(OSError):
            pidfds.append(os.pidfd_open(pid))
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, sig)
    for pid in victims:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    try:
        if sig == signal.SIGKILL:
            await _until_exited(pidfds)
    finally:
        for fd in pidfds:
            os.close(fd)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _until_exited(pidfds: list[int]) -> None:
    loop = asyncio.get_running_loop()
    waits: dict[int, asyncio.Future[None]] = {}
    for fd in pidfds:
        future: asyncio.Future[None] = loop.create_future()
        waits[fd] = future
        loop.add_reader(fd, _resolve, future)
    try:
        if waits:
            await asyncio.wait(waits.values(), timeout=_KILL_WAIT_S)
    finally:
        for fd in waits:
            loop.remove_reader(fd)


class _Protocol(asyncio.SubprocessProtocol):
    """Streams output into the buffer; tells exit and end of output apart (a child left
    running can hold the pipe open after the command itself has exited)."""

    def __init__(self, output: OutputBuffer, loop: asyncio.AbstractEventLoop) -> None:
        self.output = output
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.output.feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.closed.done():
            self.closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


class HostProcess:
    host = "host"

    def __init__(self, transport: asyncio.SubprocessTransport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self.output = protocol.output
        self.pid: int = transport.get_pid()
        self._done: asyncio.Task[int] | None = None

    @classmethod
    async def start(
        cls, command: str, *, cwd: str, env: Mapping[str, str], stdin: bool = False
    ) -> HostProcess:
        loop = asyncio.get_running_loop()
        output = OutputBuffer()
        output.bind(loop)
        transport, protocol = await loop.subprocess_exec(
            lambda: _Protocol(output, loop),
            "/bin/sh",
            "-c",
            command,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return cls(transport, protocol)

    @property
    def returncode(self) -> int | None:
        return self._transport.get_returncode() if self._protocol.exited.done() else None

    async def wait(self) -> int:
        if self._done is None:
            self._done = asyncio.create_task(self._finish())
        return await asyncio.shield(self._done)

    async def _finish(self) -> int:
        await self._protocol.exited
        # what the command left running in its group
        await kill_tree(self.pid, descendants=False)
        try:
            async with asyncio.timeout(_DRAIN_S):
                await asyncio.shield(self._protocol.closed)
        except TimeoutError:
            _log.warning("output pipe still open after exit", pid=self.pid)
        self._transport.close()
        self.output.close()
        code = self._transport.get_returncode()
        return -1 if code is None else code

    async def signal(self, sig: signal.Signals) -> None:
        if not self._protocol.exited.done():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)

    async def kill(self) -> None:
        if not self._protocol.exited.done():
            await kill_tree(self.pid)
        await self.wait()

    async def write(self, text: str, eof: bool = False) -> None:
        pipe = self._transport.get_pipe_transport(0)
        if pipe is None or not isinstance(pipe, asyncio.WriteTransport):
            raise RuntimeError("this process was started without standard input")
        if text:
            pipe.write(text.encode())
        if eof:
            pipe.write_eof()
