"""``exec`` on the host (seed 001 §4, seed 004 §4.6): a shell command in the workspace.

The deny patterns and approval modes are applied by the pipeline before this runs. Here:
the command runs with ``sh -c`` in its own process group, inside the caller's workspace,
with the environment cleared to a short allowlist; at the timeout the whole group is
killed; output is capped; the exit code is part of the result.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, ClassVar

from .base import BaseTool
from .context import ToolContext
from .errors import ExecutionFailed, InvalidParameters
from .exec.host import kill_tree
from .result import ToolResult

__all__ = ["SAFE_ENV", "ExecTool"]

#: Variables passed through from the host; everything else is dropped (seed 004 §4.6).
SAFE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "TMPDIR")
MAX_OUTPUT_CHARS = 100_000


class ExecTool(BaseTool):
    name: ClassVar[str] = "exec"
    group: ClassVar[str] = "runtime"
    description: ClassVar[str] = (
        "Run a shell command in your workspace and get its output and exit code. "
        "Destructive and remote-code commands are refused."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1},
            "workdir": {"type": "string", "description": "relative to the workspace"},
            "timeout": {"type": "integer", "minimum": 1, "maximum": 300},
        },
        "required": ["command"],
    }
    timeout: ClassVar[float] = 65.0
    requires_sanitization: ClassVar[bool] = True
    default_timeout_s: ClassVar[float] = 60.0

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        cwd = _workdir(ctx, args.get("workdir", ""))
        limit = float(args.get("timeout") or self.default_timeout_s)
        env = {k: v for k, v in os.environ.items() if k in SAFE_ENV}
        process = await asyncio.create_subprocess_exec(
            "sh",
            "-c",
            args["command"],
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(limit):
                output, _ = await process.communicate()
        except (TimeoutError, asyncio.CancelledError) as exc:
            # the whole group and every descendant, and only once they are all gone
            await asyncio.shield(kill_tree(process.pid))
            await process.wait()
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise ExecutionFailed(
                f"the command timed out after {limit:g} s and was killed "
                "with its whole process group"
            ) from exc
        text = output.decode(errors="replace")
        truncated = len(text) > MAX_OUTPUT_CHARS
        if truncated:
            text = text[:MAX_OUTPUT_CHARS] + f"\n[output truncated at {MAX_OUTPUT_CHARS} chars]"
        body = f"{text.rstrip()}\n[exit code {process.returncode}]".lstrip()
        return ToolResult(
            for_llm=body,
            is_error=process.returncode != 0,
            truncated=truncated,
            details={"exit_code": process.returncode},
        )


def _workdir(ctx: ToolContext, relative: str) -> str:
    if not ctx.workspace:
        raise ExecutionFailed("no workspace is configured for this agent, so exec cannot run")
    root = Path(ctx.workspace).resolve()
    root.mkdir(parents=True, exist_ok=True)
    target = (root / relative).resolve()
    if "\x00" in relative or (target != root and root not in target.parents):
        raise InvalidParameters("workdir must stay inside the workspace (path traversal detected)")
    if not target.is_dir():
        raise InvalidParameters(f"workdir {relative!r} is not a directory in the workspace")
    return str(target)
