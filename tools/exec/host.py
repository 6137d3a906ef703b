"""Commands on this machine: ``sh -c`` in a new session (its own process group), output
merged and streamed into an :class:`OutputBuffer`.

Killing kills the group and every descendant of the leader (a child that called
``setsid`` left the group but not the tree); ``psutil`` lists the processes. When the
leader exits, what it left running in its group is killed too: a foreground command
never leaves orphans behind (``background`` runs are for long-lived work).

A process can also leave both the group and the tree (``setsid`` in a subshell that
exits, a double fork, a daemon): it is reparented to init. So every run gets a random
``CLAWLOG_RUN_ID`` in its environment, which every descendant inherits; when the run
ends, for whatever reason, :func:`sweep_run` kills every process whose environment
(``psutil.Process.environ``) still holds it. This is Linux-only (pidfds) like the rest
of this module, and best effort: a process that execs with a cleared environment
(``env -i``) sheds the mark; only a cgroup would hold such a process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import uuid
from collections.abc import Mapping, Sequence

import psutil

from clawlog.events.domain.workspace import ProcessHost
from clawlog.events.logging import get_logger

from .output import OutputBuffer

__all__ = ["RUN_ID_ENV", "HostProcess", "kill_tree", "sweep_run"]

_log = get_logger(__name__)
#: After the leader exits, how long its output may still take to arrive.
_DRAIN_S = 2.0
#: How long killed processes may take to die (SIGKILL takes milliseconds).
_KILL_WAIT_S = 5.0
#: The environment variable that marks every process of one run.
RUN_ID_ENV = "CLAWLOG_RUN_ID"
#: A marked process may fork between a scan and its kill: scan again, this many times.
_SWEEP_ROUNDS = 8


def _group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` still has a member (no process scan)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member we may not signal: it exists
        pass
    return True


def _group_members(pgid: int) -> set[int]:
    """The pids of process group ``pgid`` (psutil has no group attribute: ``getpgid``)."""
    members = set()
    for pid in psutil.pids():
        with contextlib.suppress(OSError):  # gone since the listing
            if os.getpgid(pid) == pgid:
                members.add(pid)
    return members


def _tree(leader: int, descendants: bool = True) -> set[int]:
    """The members of ``leader``'s process group, and its descendants."""
    members = _group_members(leader)
    if not descendants:
        return members
    try:
        children = psutil.Process(leader).children(recursive=True)
    except psutil.NoSuchProcess:  # the leader is gone (reaped): no tree to walk
        children = []
    return members | {child.pid for child in children}


async def kill_tree(
    leader: int, sig: signal.Signals = signal.SIGKILL, *, descendants: bool = True
) -> None:
    """Send ``sig`` to the group of ``leader`` and to every descendant of it; for SIGKILL,
    return once they have all died (pidfds tell, no polling). Once the leader has been
    reaped its pid may be reused: then pass ``descendants=False`` (its group id stays
    reserved while any member lives, a parent-child walk from its pid does not)."""
    if not descendants and not _group_alive(leader):
        return  # the common end of a run: the group is empty, no process scan needed
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


def _marked(run_id: str) -> list[int]:
    """Pids of the processes whose environment holds ``RUN_ID_ENV=run_id``. Only our own
    uid's processes are readable (unless we are root); a process that is gone, unreadable
    or a zombie (its environment is empty) is not listed."""
    # process_iter keeps its Process objects between scans: half the cost of new ones
    return [process.pid for process in psutil.process_iter() if _carries(process, run_id)]


def _has_marker(pid: int, run_id: str) -> bool:
    try:
        return _carries(psutil.Process(pid), run_id)
    except psutil.Error:  # gone
        return False


def _carries(process: psutil.Process, run_id: str) -> bool:
    try:
        return process.environ().get(RUN_ID_ENV) == run_id
    except psutil.Error:  # gone, a zombie, or another user's
        return False


def _kill_marked(pids: list[int], run_id: str) -> list[int]:
    """SIGKILL each pid still marked; the pidfds of those killed (the caller closes them).
    The pidfd pins the process, so a pid reused since the scan is checked, not killed."""
    pidfds = []
    for pid in pids:
        if pid == os.getpid():
            continue
        try:
            fd = os.pidfd_open(pid)
        except OSError:  # already gone
            continue
        try:
            if _has_marker(pid, run_id):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
                pidfds.append(fd)
                continue
        except OSError:  # died meanwhile, or not ours to signal
            pass
        os.close(fd)
    return pidfds


async def sweep_run(run_id: str) -> int:
    """SIGKILL every process carrying ``RUN_ID_ENV=run_id`` and wait until they died;
    returns how many were killed."""
    killed = 0
    for _ in range(_SWEEP_ROUNDS):
        # reading a process's environment can block on its memory map: off the loop
        pids = await asyncio.to_thread(_marked, run_id)
        pidfds = _kill_marked(pids, run_id)
        if not pidfds:
            break
        killed += len(pidfds)
        try:
            await _until_exited(pidfds)
        finally:
            for fd in pidfds:
                os.close(fd)
    if killed:
        _log.info("killed processes the run left behind", run_id=run_id, count=killed)
    return killed


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
    host: ProcessHost = "host"

    def __init__(
        self, transport: asyncio.SubprocessTransport, protocol: _Protocol, run_id: str
    ) -> None:
        self._transport = transport
        self._protocol = protocol
        self.output = protocol.output
        self.pid: int = transport.get_pid()
        #: The ``RUN_ID_ENV`` value every process of this run carries.
        self.run_id = run_id
        self._done: asyncio.Task[int] | None = None

    @classmethod
    async def start(
        cls,
        command: str,
        *,
        cwd: str,
        env: Mapping[str, str],
        stdin: bool = False,
        args: Sequence[str] = (),
        shell: str = "/bin/sh",
    ) -> HostProcess:
        """``/bin/sh -c command``; with ``args``, ``/bin/sh -c command sh ARG…``: the
        script reads them as ``"$1"``… and the shell never parses them (custom tools,
        which pass ``shell``: see :data:`tools.custom.template.TEMPLATE_SHELL`)."""
        loop = asyncio.get_running_loop()
        output = OutputBuffer()
        output.bind(loop)
        run_id = uuid.uuid4().hex
        transport, protocol = await loop.subprocess_exec(
            lambda: _Protocol(output, loop),
            shell,
            "-c",
            command,
            *(("sh", *args) if args else ()),
            cwd=cwd,
            env={**env, RUN_ID_ENV: run_id},  # last: a call cannot choose its own
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return cls(transport, protocol, run_id)

    @property
    def returncode(self) -> int | None:
        return self._transport.get_returncode() if self._protocol.exited.done() else None

    async def wait(self) -> int:
        if self._done is None:
            self._done = asyncio.create_task(self._finish())
        return await asyncio.shield(self._done)

    async def _finish(self) -> int:
        await self._protocol.exited
        # what the command left running in its group, then what left the group
        await kill_tree(self.pid, descendants=False)
        await sweep_run(self.run_id)
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
