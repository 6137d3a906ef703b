"""``process``: the background runs of this session (seed 002 §4 ProcessParams):
``status`` (one or all), ``poll`` (new output since the last poll, the exit code once
done; ``waitMs`` waits for something new), ``input`` (stdin, ``eof`` closes it),
``signal`` (to the whole group) and ``kill``."""

from __future__ import annotations

import asyncio
import signal as signals
from typing import Any, ClassVar

from ..base import BaseTool
from ..context import ToolContext
from ..errors import InvalidParameters, ProcessFinished
from ..result import ToolResult
from .output import clip
from .processes import ManagedProcess, ProcessRegistry

__all__ = ["ALLOWED_SIGNALS", "ProcessTool"]

ALLOWED_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGKILL", "SIGUSR1", "SIGUSR2",
                   "SIGSTOP", "SIGCONT")  # fmt: skip
_MAX_WAIT_MS = 30_000


class ProcessTool(BaseTool):
    name = "process"
    group: ClassVar[str] = "runtime"
    description: ClassVar[str] = (
        "Manage the background commands exec started: status (one, or all without "
        "processId), poll (new output and the exit code; waitMs waits for news), input "
        "(write to its stdin; eof closes it), signal (e.g. SIGTERM), kill."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["status", "poll", "input", "signal", "kill"]},
            "processId": {"type": "string"},
            "input": {"type": "string"},
            "eof": {"type": "boolean"},
            "signal": {"type": "string", "enum": list(ALLOWED_SIGNALS)},
            "waitMs": {"type": "integer", "minimum": 0, "maximum": _MAX_WAIT_MS},
        },
        "required": ["action"],
    }
    timeout: ClassVar[float] = 45.0

    def __init__(
        self, processes: ProcessRegistry, *, pending_max_output_chars: int = 10_000
    ) -> None:
        self.processes = processes
        self.pending_cap = pending_max_output_chars

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        action = args.get("action")
        if action == "status" and not args.get("processId"):
            listed = self.processes.list(ctx.session_id)
            body = "\n".join(p.status_line() for p in listed) or "No background processes."
            return ToolResult.text(body, processes=[p.id for p in listed])
        process_id = args.get("processId")
        if not isinstance(process_id, str) or not process_id:
            raise InvalidParameters(f"processId is required for {action}")
        managed = self.processes.get(ctx.session_id, process_id)
        match action:
            case "status":
                return ToolResult.text(managed.status_line(), **_state(managed))
            case "poll":
                return await self._poll(managed, int(args.get("waitMs") or 0))
            case "input":
                return await self._input(managed, args)
            case "signal":
                return await self._signal(managed, str(args.get("signal") or "SIGTERM"))
            case "kill":
                await self.processes.kill(managed)
                return await self._poll(managed, 0, prefix=f"Killed {managed.id}.\n")
        raise InvalidParameters(
            f"unknown action {action!r}: use status, poll, input, signal or kill"
        )

    async def _poll(self, managed: ManagedProcess, wait_ms: int, prefix: str = "") -> ToolResult:
        output = managed.run.output
        if wait_ms and managed.running and output.total <= managed.read_offset:
            waiter = asyncio.ensure_future(output.wait_for(managed.read_offset))
            watcher = managed.watcher or waiter
            await asyncio.wait(
                {waiter, watcher},
                timeout=min(wait_ms, _MAX_WAIT_MS) / 1000,
                return_when=asyncio.FIRST_COMPLETED,
            )
            waiter.cancel()
        if managed.run.returncode is not None and managed.watcher is not None:
            await asyncio.shield(managed.watcher)  # let the exit be recorded first
        text, managed.read_offset = output.since(managed.read_offset)
        await self.processes.flush(managed)
        if not managed.running and managed.watcher is not None:
            # It ended while its output was recorded: its exit too is in the log before
            # the model hears of it.
            await asyncio.shield(managed.watcher)
        shown, cut = clip(text, self.pending_cap)
        status = managed.status_line()
        body = prefix + (f"{shown.rstrip()}\n" if shown.strip() else "(no new output)\n")
        body += f"[{status}]" if managed.running else f"[exit code {managed.exit_code}]"
        return ToolResult(for_llm=body, details=_state(managed), truncated=cut)

    async def _input(self, managed: ManagedProcess, args: dict[str, Any]) -> ToolResult:
        text = args.get("input", "")
        if not isinstance(text, str):
            raise InvalidParameters("input must be a string")
        eof = bool(args.get("eof"))
        if not managed.running:
            raise ProcessFinished(f"{managed.id} has already ended; it takes no input")
        try:
            await managed.run.write(text, eof)
        except (RuntimeError, OSError) as exc:
            raise ProcessFinished(f"cannot write to {managed.id}: {exc}") from exc
        await self.processes.record_input(managed, len(text), eof)
        return ToolResult.text(
            f"Wrote {len(text)} characters to {managed.id}"
            + (" and closed its input." if eof else "."),
            **_state(managed),
        )

    async def _signal(self, managed: ManagedProcess, name: str) -> ToolResult:
        if name not in ALLOWED_SIGNALS:
            raise InvalidParameters(f"signal must be one of {', '.join(ALLOWED_SIGNALS)}")
        if not managed.running:
            raise ProcessFinished(f"{managed.id} has already ended (exit code {managed.exit_code})")
        if name == "SIGKILL":
            await self.processes.record_signal(managed, name)
            await self.processes.kill(managed)
            return ToolResult.text(f"Killed {managed.id}.", **_state(managed))
        await managed.run.signal(signals.Signals[name])
        await self.processes.record_signal(managed, name)
        return ToolResult.text(
            f"Sent {name} to {managed.id}; poll to see how it ends.", **_state(managed)
        )


def _state(managed: ManagedProcess) -> dict[str, Any]:
    return {
        "process_id": managed.id,
        "running": managed.running,
        "exit_code": managed.exit_code,
        "reason": managed.reason,
        "host": managed.run.host,
    }
