"""Background runs (seed 002 §4 ``background`` / ``yieldMs`` and the process tool), and
the events that record them.

A run handed to the registry gets an id (``proc_…``), a watcher task that enforces its
timeout and records its output (in chunks, when polled, and at the end) and its exit on
the calling session's stream, through the same kind of ``record(stream, events)`` port as
the workspace stores. Only the session that started a process sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable
from typing import NamedTuple

from clawlog.events import Event
from clawlog.events.domain.workspace import (
    ExitReason,
    ProcessExited,
    ProcessInput,
    ProcessOutput,
    ProcessSignalled,
    ProcessStarted,
)
from clawlog.events.logging import get_logger
from clawlog.events.streams import session_stream

from ..context import ToolContext
from ..errors import ProcessLimit, UnknownProcess
from ..workspace.stores import Recorder, Scrub, no_scrub
from .runs import RunningProcess

__all__ = ["ManagedProcess", "ProcessRegistry"]

_log = get_logger(__name__)
_CHUNK_CHARS = 4096
#: Finished processes a session can still poll (older ones are forgotten).
_KEEP_FINISHED = 32


def _session_of(ctx: ToolContext) -> str:
    """A registry on its own records on the calling session's stream."""
    return session_stream(ctx.agent, ctx.session_key)


class ManagedProcess:
    """One background run and what the session has read of it."""

    def __init__(
        self,
        process_id: str,
        command: str,
        run: RunningProcess,
        stream: str,
        timeout_s: float,
    ) -> None:
        self.id = process_id
        self.command = command
        self.run = run
        self.stream = stream
        self.timeout_s = timeout_s
        self.started = time.monotonic()
        self.ended: float | None = None
        #: None while running.
        self.reason: ExitReason | None = None
        self.exit_code: int | None = None
        #: Characters of output the model has been shown (``poll``).
        self.read_offset = 0
        #: Characters of output recorded as events.
        self.recorded_offset = 0
        self.watcher: asyncio.Task[None] | None = None
        self.killed_by: ExitReason | None = None

    @property
    def running(self) -> bool:
        return self.reason is None

    def runtime_s(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def status_line(self) -> str:
        state = "running" if self.running else f"{self.reason} (exit code {self.exit_code})"
        runtime = f"{self.runtime_s():.1f}s"
        return f"{self.id} [{self.run.host}] {state} after {runtime}: {self.command[:120]}"


class _Key(NamedTuple):
    session: str
    process_id: str


class ProcessRegistry:
    """The background processes of every session, on the I/O loop."""

    def __init__(
        self,
        record: Recorder | None = None,
        *,
        scrub: Scrub = no_scrub,
        max_per_session: int = 8,
        max_recorded_chars: int = 100_000,
        stream_for: Callable[[ToolContext], str] = _session_of,
    ) -> None:
        self._record = record
        #: The stream a session's process (and sandbox) events go to: the session's own
        #: by default; a system whose Session actors own their streams gives a sibling.
        self.stream_for = stream_for
        self._scrub = scrub
        self.max_per_session = max_per_session
        self.max_recorded_chars = max_recorded_chars
        self._processes: dict[_Key, ManagedProcess] = {}
        self._closed = False

    # -- adopting -----------------------------------------------------------------------
    async def adopt(
        self,
        ctx: ToolContext,
        run: RunningProcess,
        command: str,
        *,
        timeout_s: float,
        remaining_s: float,
        workdir: str = "",
        call_id: str = "",
    ) -> ManagedProcess:
        """Take over a running command; it is killed after ``remaining_s`` more seconds."""
        try:
            self.ensure_capacity(ctx.session_id)
        except ProcessLimit:
            await run.kill()
            raise
        self._forget_old(ctx.session_id)
        process_id = "proc_" + secrets.token_hex(4)
        stream = self.stream_for(ctx)
        managed = ManagedProcess(process_id, command, run, stream, timeout_s)
        self._processes[_Key(ctx.session_id, process_id)] = managed
        started = ProcessStarted(
            process_id=process_id,
            command=self._scrub(command),
            agent=ctx.agent,
            session_key=ctx.session_key,
            host=run.host,
            workdir=workdir,
            call_id=call_id,
            timeout_s=timeout_s,
        )
        # recorded before adopt returns (so before any input or signal), but never lost
        # to a cancelled caller; the watcher starts from it, so events stay in order
        recorded = asyncio.ensure_future(self._emit(managed, started))
        managed.watcher = asyncio.create_task(self._watch(managed, remaining_s, recorded))
        await asyncio.shield(recorded)
        return managed

    def _forget_old(self, session_id: str) -> None:
        finished = [p for p in self.list(session_id) if not p.running]
        for managed in finished[: max(len(finished) - _KEEP_FINISHED, 0)]:
            self._processes.pop(_Key(session_id, managed.id), None)

    def ensure_capacity(self, session_id: str) -> None:
        """Raise :class:`ProcessLimit` when the session may not start another one."""
        running = [p for p in self.list(session_id) if p.running]
        if len(running) >= self.max_per_session:
            raise ProcessLimit(
                f"this session already has {len(running)} background processes running; "
                "kill one with the process tool first"
            )

    async def _watch(
        self, managed: ManagedProcess, remaining_s: float, started: asyncio.Future[None]
    ) -> None:
        await started
        run = managed.run
        ended = asyncio.ensure_future(run.wait())
        try:
            async with asyncio.timeout(max(remaining_s, 0.0)):
                while not ended.done():
                    more = asyncio.ensure_future(
                        run.output.wait_for(managed.recorded_offset + _CHUNK_CHARS - 1)
                    )
                    await asyncio.wait({ended, more}, return_when=asyncio.FIRST_COMPLETED)
                    more.cancel()
                    if run.output.total - managed.recorded_offset >= _CHUNK_CHARS:
                        await self.flush(managed)
            code: int | None = ended.result()
            reason: ExitReason = managed.killed_by or ("signalled" if (code or 0) < 0 else "exited")
        except TimeoutError:
            await run.kill()
            code, reason = run.returncode, "timeout"
        await self._finish(managed, code, reason)

    async def _finish(self, managed: ManagedProcess, code: int | None, reason: ExitReason) -> None:
        managed.exit_code, managed.reason, managed.ended = code, reason, time.monotonic()
        await self.flush(managed)
        total = managed.run.output.total
        await self._emit(
            managed,
            ProcessExited(
                process_id=managed.id,
                exit_code=code,
                reason=reason,
                duration_ms=managed.runtime_s() * 1000,
                output_chars=total,
                truncated=managed.recorded_offset < total,
            ),
        )

    # -- lookups ------------------------------------------------------------------------
    def get(self, session_id: str, process_id: str) -> ManagedProcess:
        found = self._processes.get(_Key(session_id, process_id))
        if found is None:
            known = ", ".join(p.id for p in self.list(session_id)) or "none"
            raise UnknownProcess(
                f"no process {process_id!r} in this session (its processes: {known})"
            )
        return found

    def list(self, session_id: str) -> list[ManagedProcess]:
        return [p for key, p in self._processes.items() if key.session == session_id]

    # -- recording ----------------------------------------------------------------------
    async def flush(self, managed: ManagedProcess) -> None:
        """Record the output not recorded yet (up to the recording cap)."""
        output = managed.run.output
        cap = self.max_recorded_chars
        if managed.recorded_offset >= min(output.total, cap):
            return
        text, end = output.since(managed.recorded_offset)
        room = cap - managed.recorded_offset
        if len(text) > room:
            text, end = text[:room], managed.recorded_offset + room
        event = ProcessOutput(
            process_id=managed.id, text=self._scrub(text), offset=managed.recorded_offset
        )
        managed.recorded_offset = end
        await self._emit(managed, event)

    async def record_input(self, managed: ManagedProcess, chars: int, eof: bool) -> None:
        await self._emit(managed, ProcessInput(process_id=managed.id, chars=chars, eof=eof))

    async def record_signal(self, managed: ManagedProcess, signal_name: str) -> None:
        await self._emit(managed, ProcessSignalled(process_id=managed.id, signal=signal_name))

    async def _emit(self, managed: ManagedProcess, event: Event) -> None:
        if self._record is None:
            return
        try:
            await self._record(managed.stream, [event])
        except Exception as exc:  # the run goes on; the log says why it has a gap
            _log.warning(
                "process event not recorded",
                process_id=managed.id,
                stream=managed.stream,
                error=repr(exc)[:300],
            )

    # -- ending -------------------------------------------------------------------------
    async def kill(self, managed: ManagedProcess, reason: ExitReason = "killed") -> None:
        if managed.running:
            managed.killed_by = reason
            await managed.run.kill()
        if managed.watcher is not None:
            await asyncio.shield(managed.watcher)

    async def close_session(self, session_id: str) -> None:
        """Kill every process of a session (the session ended) and forget them."""
        processes = self.list(session_id)
        for managed in processes:
            await self.kill(managed)
        for managed in processes:
            self._processes.pop(_Key(session_id, managed.id), None)

    async def aclose(self) -> None:
        """Kill everything (the system closes). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        sessions = {key.session for key in self._processes}
        for session in sessions:
            with contextlib.suppress(Exception):
                await self.close_session(session)
