"""``CustomTool``: one custom tool definition as a Tool the pipeline runs.

A call renders the command template (:mod:`tools.custom.template`) with the arguments,
each one word; the display form goes through the exec deny table and the approval rules
like an ``exec`` command (:func:`tools.approvals.command_of` asks ``rendered_command``),
and again through exec's analysis just before the run. It runs on this machine with the
exec tool's process runner (:class:`tools.exec.host.HostProcess`: its own process group,
killed with everything it started at the timeout or when the call is cancelled), in the
definition's working directory, else the caller's workspace, else a fresh temporary
folder; the environment is exec's safe allowlist plus the tool's own variables, decrypted
into the child's environment only. The answer is the combined output (cut like exec's)
and ``[exit code N]``; the tool's env values are scrubbed from it here as well as by the
pipeline's scrubber (the catalog gives it them), so output echoing a secret shows
``[REDACTED]``.

Argument values become words as JSON would write them: a string as is, ``true`` /
``false``, numbers, arrays and objects as compact JSON; an absent argument (or ``null``)
is absent (see the template's rules).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import msgspec

from clawlog.events.domain.custom_tool import CustomToolDefined
from clawlog.events.domain.tool import SideEffects, ToolDomain
from clawlog.events.logging import get_logger

from ..context import ToolContext
from ..errors import (
    CommandDenied,
    CommandTimedOut,
    CustomToolUnavailable,
    ExecutionFailed,
    InvalidParameters,
)
from ..exec.analysis import analyze
from ..exec.env import SAFE_ENV_VARS, command_env
from ..exec.host import HostProcess
from ..exec.output import clip
from ..finish import DEFAULT_MAX_RESULT_CHARS
from ..result import ErrorKind, ToolResult
from ..scrub import REDACTED, Scrubber
from .template import TEMPLATE_SHELL, CommandTemplate, Rendering

__all__ = ["CustomTool", "argument_text"]

_log = get_logger(__name__)
#: Beyond the command's own timeout, what killing it and collecting its output may take
#: before the pipeline gives up on the call.
_KILL_GRACE_S = 30.0


def argument_text(value: Any) -> str | None:
    """The word an argument value becomes (None: absent)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return msgspec.json.encode(value).decode()


class CustomTool:
    """A custom tool. One instance serves every concurrent call."""

    group: ClassVar[str] = "custom"
    domain: ClassVar[ToolDomain] = "orchestrator"
    owner_only: ClassVar[bool] = False
    requires_sanitization: ClassVar[bool] = True
    requires_approval: ClassVar[bool] = False
    #: It runs a command: it may act again.
    side_effects: ClassVar[SideEffects] = "external"

    def __init__(
        self,
        definition: CustomToolDefined,
        *,
        env: Mapping[str, str] | None = None,
        unavailable: str = "",
        max_output_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        """``env``: the decrypted variables; ``unavailable``: why they could not be
        decrypted (every call then fails with it, naming the tool)."""
        self.definition = definition
        self.name = definition.name
        self.description = definition.description or f"Runs the command: {definition.command}"
        self.parameters: Mapping[str, Any] = definition.parameters
        self.template = CommandTemplate(definition.command)
        self.timeout_s = definition.timeout_s
        self.timeout = definition.timeout_s + _KILL_GRACE_S
        self.unavailable = unavailable
        self.max_output_chars = max_output_chars
        self._env = dict(env or {})
        self._scrubber = Scrubber(self._env.values())

    def share_secrets(self, scrubber: Scrubber) -> None:
        """Teach ``scrubber`` this tool's env values (so no event or answer shows them)."""
        scrubber.add_values(*self._env.values())

    # -- what the pipeline asks -----------------------------------------------------------
    def render(self, args: Mapping[str, Any]) -> Rendering:
        return self.template.render(
            {key: argument_text(args.get(key)) for key in self.template.keys}
        )

    def rendered_command(self, args: Mapping[str, Any]) -> str:
        """The command this call would run, values shell-quoted (what deny patterns,
        approvals and the allowlist see)."""
        return self.render(args).display

    def requires_approval_for(self, args: Mapping[str, Any]) -> bool:
        return analyze(self.rendered_command(args)).action == "approve"

    # -- running ------------------------------------------------------------------------
    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        if self.unavailable:
            raise CustomToolUnavailable(self.unavailable)
        rendering = self.render(args)
        for key, value in zip(self.template.keys, rendering.argv, strict=True):
            if "\x00" in value:
                raise InvalidParameters(
                    f"argument {key!r} holds a NUL character, which no program can receive "
                    "in an argument; send it without that character"
                )
        verdict = analyze(rendering.display)
        if verdict.action == "deny":
            _log.info("custom command denied", tool=self.name, label=verdict.label)
            raise CommandDenied(verdict.message)
        started = time.monotonic()
        async with self._folder(ctx) as cwd:
            env = command_env(home=cwd, cwd=cwd, allow=SAFE_ENV_VARS)
            env.update(self._env)
            run = await _start_shielded(rendering, cwd, env)
            try:
                async with asyncio.timeout(self.timeout_s):
                    code = await run.wait()
            except TimeoutError:
                await run.kill()
                raise self._timed_out(run) from None
            except asyncio.CancelledError:
                await asyncio.shield(run.kill())
                raise
        # Scrubbed before it is clipped: a value cut in two by the clip (the model can make
        # the output any length) would be shown in part, where no scrubbing recognizes it.
        text, cut = clip(self._scrubbed_output(run), self.max_output_chars)
        body = self._scrubber.scrub(f"{text.rstrip()}\n[exit code {code}]".lstrip())
        details = {
            "exit_code": code,
            "duration_ms": round((time.monotonic() - started) * 1000, 1),
            "command": self._scrubber.scrub(rendering.display)[:2000],
        }
        return ToolResult(
            for_llm=body,
            details=details,
            truncated=cut,
            is_error=code != 0,
            error_kind=ErrorKind.EXECUTION_FAILED if code != 0 else None,
        )

    @contextlib.asynccontextmanager
    async def _folder(self, ctx: ToolContext) -> AsyncIterator[str]:
        """The working directory: the definition's, the caller's workspace, or a
        temporary folder removed after the call."""
        configured = self.definition.working_dir
        if configured:
            if not os.path.isdir(configured):
                raise ExecutionFailed(
                    f"custom tool {self.name!r} runs in {configured}, which is not a folder "
                    "on this machine; tell the user (the tool's definition must be fixed)"
                )
            yield configured
        elif ctx.workspace:
            path = Path(ctx.workspace).resolve()
            path.mkdir(parents=True, exist_ok=True)
            yield str(path)
        else:
            with tempfile.TemporaryDirectory(prefix="clawlog-custom-") as folder:
                yield os.path.realpath(folder)

    def _scrubbed_output(self, run: HostProcess) -> str:
        """The run's kept output with the env values redacted, also a value's part at the
        edges of a middle the output buffer did not keep (its head ends with the start of
        a value, its tail begins with the end of one)."""
        pieces = _NOT_KEPT.split(run.output.text())
        values = [v for v in self._env.values() if len(v.strip()) >= _MIN_VALUE_CHARS]
        for index in range(0, len(pieces) - 2, 2):  # text, notice, text, notice, text...
            pieces[index] = _redact_value_start(pieces[index], values)
            pieces[index + 2] = _redact_value_end(pieces[index + 2], values)
        return "".join(self._scrubber.scrub(piece) for piece in pieces)

    def _timed_out(self, run: HostProcess) -> CommandTimedOut:
        shown, _ = clip(self._scrubbed_output(run), 10_000)
        return CommandTimedOut(
            f"custom tool {self.name!r} timed out after {self.timeout_s:g} s and was killed "
            "with its whole process group"
            + (f"; output before it was killed:\n{shown}" if shown.strip() else "")
        )

    def __repr__(self) -> str:
        scope = f" of {self.definition.agent}" if self.definition.agent else ""
        return f"<CustomTool {self.name!r}{scope}>"


#: The notice :meth:`OutputBuffer.text` puts where it dropped the middle of the output.
_NOT_KEPT = re.compile(r"(\n\[… \d+ characters of output not kept …\]\n)")
#: Values this short are not scrubbed (they would redact words): Scrubber's minimum.
_MIN_VALUE_CHARS = 4


def _redact_value_start(text: str, values: list[str]) -> str:
    """``text`` without a trailing start of one of ``values`` (the rest was dropped)."""
    for value in values:
        for size in range(len(value) - 1, 0, -1):
            if text.endswith(value[:size]):
                return text[: len(text) - size] + REDACTED
    return text


def _redact_value_end(text: str, values: list[str]) -> str:
    """``text`` without a leading end of one of ``values`` (the start was dropped)."""
    for value in values:
        for size in range(len(value) - 1, 0, -1):
            if text.startswith(value[-size:]):
                return REDACTED + text[size:]
    return text


async def _start_shielded(rendering: Rendering, cwd: str, env: Mapping[str, str]) -> HostProcess:
    """Start the run; if the call is cancelled meanwhile, the command may already be
    running: wait for the start to complete, kill it, then give up (as exec does)."""
    starting = asyncio.ensure_future(
        HostProcess.start(
            rendering.script, cwd=cwd, env=env, args=rendering.argv, shell=TEMPLATE_SHELL
        )
    )
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            run = await starting
            await run.kill()
        raise
