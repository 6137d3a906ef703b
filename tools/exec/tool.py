"""``exec``: a shell command in the caller's workspace, on the host or in the sandbox
(seed 001 §4, seed 002 §4, seed 003 exec, seed 004 §4.6 shell).

Before it runs: :func:`analyze` refuses deny / dangerous / injection patterns however
they are wrapped (``requires_approval_for`` asks a person for never-auto-approve ones);
the working directory must be a folder inside the workspace; the environment is cleared
to an allowlist. It runs in the session's sandbox container when one is configured (if
the sandbox cannot be used: refused, or run on the host where the configuration says so,
and recorded either way). At the timeout the whole process group is killed. The answer
is the combined output (100K characters at most) and ``[exit code N]``. With
``background`` (or when ``yieldMs`` passes first) the run continues under the ``process``
tool.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Mapping
from typing import Any, ClassVar

from clawlog.events.domain.workspace import (
    ProcessHost,
    SandboxSkipped,
    SandboxSkippedAction,
)
from clawlog.events.logging import get_logger

from ..base import BaseTool, SideEffects, ToolDomain
from ..context import ToolContext
from ..errors import (
    CommandDenied,
    CommandTimedOut,
    InvalidParameters,
    SandboxError,
    SandboxRefused,
    WorkspaceError,
)
from ..result import ErrorKind, ToolResult
from ..workspace.access import WorkspaceEnv, workspace_root
from ..workspace.stores import Recorder
from .analysis import analyze
from .config import ExecConfig
from .env import command_env, requested_env
from .host import HostProcess
from .output import clip
from .processes import ProcessRegistry
from .runs import RunningProcess, SandboxRunner

__all__ = ["ExecTool"]

_log = get_logger(__name__)
_SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ExecTool(BaseTool):
    group: ClassVar[str] = "runtime"
    domain: ClassVar[ToolDomain] = "container"
    side_effects: ClassVar[SideEffects] = "external"
    description: ClassVar[str] = (
        "Run a shell command in your workspace; answers its output and exit code. Set "
        "background (or yieldMs) for long-running commands, then use the process tool. "
        "Destructive, privilege-escalating and remote-code commands are refused."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1},
            "workdir": {"type": "string", "description": "Folder relative to the workspace"},
            "working_dir": {"type": "string", "description": "Same as workdir"},
            "env": {"type": "object", "additionalProperties": {"type": "string"}},
            "timeout": {"type": "integer", "minimum": 1, "description": "Seconds"},
            "background": {"type": "boolean", "description": "Return at once; poll later"},
            "yieldMs": {
                "type": "integer",
                "minimum": 0,
                "description": "Go to the background after this many ms",
            },
            "security": {"type": "string", "enum": ["deny", "allowlist", "full"]},
            "ask": {"type": "string", "enum": ["off", "on-miss", "always"]},
        },
        "required": ["command"],
    }

    def __init__(
        self,
        config: ExecConfig | None = None,
        *,
        workspace: WorkspaceEnv | None = None,
        sandbox: SandboxRunner | None = None,
        processes: ProcessRegistry | None = None,
        record: Recorder | None = None,
        name: str = "exec",
    ) -> None:
        self.config = config or ExecConfig()
        self.name = name  # type: ignore[misc]
        self.workspace = workspace or WorkspaceEnv()
        self.sandbox = sandbox
        self.processes = processes or ProcessRegistry(
            record, max_per_session=self.config.max_processes_per_session
        )
        self._record = record
        self.timeout = self.config.max_timeout_s + 30  # type: ignore[misc]
        self.requires_approval = self.config.requires_approval  # type: ignore[misc]

    def requires_approval_for(self, args: Mapping[str, Any]) -> bool:
        command = args.get("command")
        return isinstance(command, str) and analyze(command).action == "approve"

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise InvalidParameters("command is required")
        verdict = analyze(command)
        if verdict.action == "deny":
            _log.info(
                "command denied",
                category=verdict.category,
                label=verdict.label,
                agent=ctx.agent,
                session_key=ctx.session_key,
            )
            raise CommandDenied(verdict.message)
        root = str(workspace_root(ctx, self.workspace.config))
        workdir = self._workdir(root, args)
        requested = args.get("env") if isinstance(args.get("env"), dict) else None
        background = bool(args.get("background"))
        yield_ms = args.get("yieldMs", self.config.default_yield_ms)
        stdin = background or yield_ms is not None
        if background:
            self.processes.ensure_capacity(ctx.session_id)
        run, details = await self._start_shielded(ctx, command, root, workdir, requested, stdin)
        limit = self._timeout(args, run.host)
        details.update(workdir=workdir, timeout_s=limit)
        started = time.monotonic()
        if background:
            return await self._to_background(ctx, run, command, limit, 0.0, workdir, details)
        wait_s = limit if yield_ms is None else min(limit, max(int(yield_ms), 0) / 1000)
        try:
            async with asyncio.timeout(wait_s):
                code = await run.wait()
        except TimeoutError:
            elapsed = time.monotonic() - started
            if yield_ms is not None and elapsed < limit:
                return await self._to_background(
                    ctx, run, command, limit, elapsed, workdir, details
                )
            await run.kill()
            raise self._timed_out(run, limit) from None
        except asyncio.CancelledError:
            await asyncio.shield(run.kill())
            raise
        return self._finished(run, code, time.monotonic() - started, details)

    # -- pieces -------------------------------------------------------------------------
    def _workdir(self, root: str, args: Mapping[str, Any]) -> str:
        raw = args.get("workdir") or args.get("working_dir") or args.get("cwd") or "."
        try:
            resolved = self.workspace.guard.resolve(root, raw)
        except WorkspaceError as exc:
            raise InvalidParameters(f"workdir: {exc}") from exc
        if not os.path.isdir(resolved.real):
            raise InvalidParameters(f"workdir {raw!r} is not a folder in the workspace")
        return resolved.real_rel

    def _timeout(self, args: Mapping[str, Any], host: ProcessHost) -> float:
        default = self.config.sandbox_timeout_s if host == "sandbox" else self.config.host_timeout_s
        asked = args.get("timeout")
        value = float(asked) if isinstance(asked, int | float) and asked > 0 else default
        return min(value, self.config.max_timeout_s)

    async def _start_shielded(
        self,
        ctx: ToolContext,
        command: str,
        root: str,
        workdir: str,
        requested: Mapping[str, object] | None,
        stdin: bool,
    ) -> tuple[RunningProcess, dict[str, Any]]:
        """Start the run; if the call is cancelled meanwhile, the command may already be
        running: wait for the start to complete, kill it, then give up."""
        starting = asyncio.ensure_future(self._start(ctx, command, root, workdir, requested, stdin))
        try:
            return await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                run, _ = await starting
                await run.kill()
            raise

    async def _start(
        self,
        ctx: ToolContext,
        command: str,
        root: str,
        workdir: str,
        requested: Mapping[str, object] | None,
        stdin: bool,
    ) -> tuple[RunningProcess, dict[str, Any]]:
        if self.sandbox is not None:
            sandbox = self.sandbox
            home = sandbox.container_root if sandbox.workspace_access == "rw" else "/tmp"
            env = {"PATH": _SANDBOX_PATH, "HOME": home, "LANG": "C.UTF-8"}
            env.update(requested_env(requested))
            inside = sandbox.container_root + (f"/{workdir}" if workdir else "")
            try:
                run = await sandbox.start(
                    ctx.effective_sandbox_key, root, command, workdir=inside, env=env, stdin=stdin
                )
                return run, {"host": "sandbox"}
            except SandboxError as exc:
                fallback = await self._sandbox_unavailable(ctx, str(exc))
                details: dict[str, Any] = {"host": "host", "sandbox_fallback": fallback}
        else:
            details = {"host": "host"}
        cwd = os.path.join(os.path.realpath(root), workdir) if workdir else os.path.realpath(root)
        env = command_env(
            home=os.path.realpath(root),
            cwd=cwd,
            requested=requested,
            allow=self.config.safe_env,
            path_prepend=self.config.path_prepend,
        )
        return await HostProcess.start(command, cwd=cwd, env=env, stdin=stdin), details

    async def _sandbox_unavailable(self, ctx: ToolContext, reason: str) -> str:
        action: SandboxSkippedAction = (
            "host_fallback" if self.config.sandbox_fallback == "host" else "refused"
        )
        _log.warning(
            "sandbox unavailable",
            action=action,
            reason=reason,
            agent=ctx.agent,
            session_key=ctx.session_key,
        )
        if self._record is not None:
            event = SandboxSkipped(
                sandbox_key=ctx.effective_sandbox_key, reason=reason[:500], action=action
            )
            try:
                await self._record(self.processes.stream_for(ctx), [event])
            except Exception as exc:
                _log.warning("sandbox event not recorded", error=repr(exc)[:300])
        if action == "refused":
            raise SandboxRefused(
                f"the sandbox is configured but not available ({reason}); the command was not "
                "run, and running it on the host is not allowed here"
            )
        return reason

    async def _to_background(
        self,
        ctx: ToolContext,
        run: RunningProcess,
        command: str,
        limit: float,
        elapsed: float,
        workdir: str,
        details: dict[str, Any],
    ) -> ToolResult:
        managed = await self.processes.adopt(
            ctx, run, command, timeout_s=limit, remaining_s=limit - elapsed, workdir=workdir
        )
        text, managed.read_offset = run.output.since(0)
        shown, cut = clip(text, self.config.pending_max_output_chars)
        body = (
            f"The command is running in the background as process {managed.id} "
            f"(timeout {limit:g} s). Use the process tool with processId {managed.id}: "
            "poll for new output and the exit code, input to write to it, kill to stop it."
        )
        if shown:
            body += f"\nOutput so far:\n{shown}"
        details.update(process_id=managed.id, background=True)
        return ToolResult(for_llm=body, details=details, truncated=cut)

    def _finished(
        self, run: RunningProcess, code: int, elapsed: float, details: dict[str, Any]
    ) -> ToolResult:
        text, cut = clip(run.output.text(), self.config.max_output_chars)
        body = f"{text.rstrip()}\n[exit code {code}]".lstrip()
        details.update(exit_code=code, duration_ms=round(elapsed * 1000, 1))
        return ToolResult(
            for_llm=body,
            details=details,
            truncated=cut,
            is_error=code != 0,
            error_kind=ErrorKind.EXECUTION_FAILED if code != 0 else None,
        )

    def _timed_out(self, run: RunningProcess, limit: float) -> CommandTimedOut:
        text, _ = clip(run.output.text(), self.config.pending_max_output_chars)
        return CommandTimedOut(
            f"command timed out after {limit:g} s and was killed with its whole process group"
            + (f"; output before it was killed:\n{text}" if text.strip() else "")
        )
