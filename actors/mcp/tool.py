"""A discovered MCP tool as a ``tools.Tool`` (seed 004 §5 ``McpToolWrapper``).

Its ``execute`` calls the server's live connection through its McpConnection actor's
direct calls (:mod:`actors.mcp._direct`), on the hub under the call deadline; the answer
becomes a :class:`tools.ToolResult`, scrubbed of the server's own configured secrets (its
``env`` and ``headers`` values) on top of what the pipeline scrubs. ``destructiveHint`` →
``requires_approval``; ``readOnlyHint`` is kept as ``read_only``. MCP errors become the
``tools`` error a model can act on.

Its side effects (what a re-run after a restart would do, :mod:`tools.side_effects`)
come from the annotations, with the MCP specification's defaults for an absent hint
(``readOnlyHint`` false, ``idempotentHint`` false): ``readOnlyHint`` → ``none``, else
``idempotentHint`` → ``idempotent`` (the spec: "calling the tool repeatedly with the same
arguments will have no additional effect", whether or not it is destructive), else
``external``. Annotations are the server's word: an operator who does not trust a server
should not grant its tools.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp.types as mt
import msgspec

from clawlog.events.domain.mcp import McpToolInfo
from clawlog.tools import (
    ErrorKind,
    ExecutionFailed,
    ExternalServiceError,
    InvalidParameters,
    Scrubber,
    SideEffects,
    ToolCallError,
    ToolContext,
    ToolDomain,
    ToolResult,
    ToolTimeout,
)

from ..errors import (
    McpCallTimeout,
    McpConnectionLost,
    McpError,
    McpProtocolError,
    McpUnavailable,
)

__all__ = ["CallFunction", "McpTool", "mcp_side_effects", "to_tool_result"]

#: ``(server tool name, arguments) -> result``: how a tool reaches its connection.
CallFunction = Callable[[str, dict[str, Any]], Awaitable[mt.CallToolResult]]
#: The pipeline's own timeout is a backstop behind the connection's call deadline.
_PIPELINE_MARGIN_S = 5.0
_INVALID_PARAMS = -32602
_EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


class McpTool:
    """One tool of one server, under its registered name and in group ``mcp:{server}``."""

    domain: ToolDomain = "orchestrator"
    owner_only = False
    requires_sanitization = True

    def __init__(
        self,
        info: McpToolInfo,
        *,
        server: str,
        call: CallFunction,
        call_timeout_s: float,
        scrubber: Scrubber | None = None,
    ) -> None:
        self.info = info
        self.server = server
        self.name = info.registered_name
        self.remote_name = info.name
        described = info.description or info.title or info.name
        self.description = f"{described} (MCP server {server})"
        self.parameters: Mapping[str, Any] = info.input_schema or _EMPTY_SCHEMA
        self.group = f"mcp:{server}"
        self.call_timeout_s = call_timeout_s
        self.timeout = call_timeout_s + _PIPELINE_MARGIN_S
        self.requires_approval = info.requires_approval
        self.read_only = bool(info.read_only)
        self.side_effects: SideEffects = mcp_side_effects(info)
        self._call = call
        #: Redacts this server's configured secrets from what it returns.
        self.scrubber = scrubber or Scrubber()

    def requires_approval_for(self, args: Mapping[str, Any]) -> bool:
        return False

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        try:
            result = await self._call(self.remote_name, args)
        except McpError as exc:
            raise self._tool_error(exc) from exc
        return self.to_result(result)

    def to_result(self, result: mt.CallToolResult) -> ToolResult:
        """The server's answer as the model reads it (scrubbed of this server's secrets)."""
        return to_tool_result(self, result, self.scrubber)

    def _tool_error(self, error: McpError) -> ToolCallError:
        message = self.scrubber.scrub(str(error))
        where = f"the MCP server {self.server!r}"
        match error:
            case McpUnavailable():
                return ExternalServiceError(
                    f"{message}. {where} is down; continue without this tool or try later."
                )
            case McpCallTimeout():
                return ToolTimeout(f"{message}; {where} may be overloaded or hung.")
            case McpConnectionLost():
                return ExternalServiceError(
                    f"{message}. The call may or may not have run on {where}; check before "
                    "repeating it."
                )
            case McpProtocolError(code=code) if code == _INVALID_PARAMS:
                return InvalidParameters(f"{message}. Fix the arguments and call again.")
        return ExecutionFailed(message)

    def __repr__(self) -> str:
        return f"<McpTool {self.name!r} ({self.server}:{self.remote_name})>"


def mcp_side_effects(info: McpToolInfo) -> SideEffects:
    """What calling the tool again does, from its annotations (absent hints are false,
    as the MCP specification's defaults say)."""
    if info.read_only is True:
        return "none"
    if info.idempotent is True:
        return "idempotent"
    return "external"


def to_tool_result(tool: McpTool, result: mt.CallToolResult, scrubber: Scrubber) -> ToolResult:
    """The model's view of a call result: text blocks joined, other blocks described,
    structured content kept in ``details["structured"]``. ``scrubber`` redacts the
    server's own secrets (the pipeline's scrubber runs on the result afterwards anyway)."""
    secrets = scrubber.values_count > 0
    text = "\n".join(_describe(block) for block in result.content)
    text = scrubber.scrub(text) if secrets else text
    details: dict[str, Any] = {"server": tool.server, "tool": tool.remote_name}
    if result.structured_content is not None:
        structured = result.structured_content
        structured = scrubber.scrub_value(structured) if secrets else structured
        details["structured"] = structured
        if not text:
            text = msgspec.json.encode(structured).decode()
    if result.is_error:
        kind = ErrorKind.INVALID_PARAMETERS if f"{_INVALID_PARAMS}" in text[:40] else None
        return ToolResult.error(
            kind or ErrorKind.EXECUTION_FAILED,
            f"{tool.name} failed: {text or 'the server reported an error without details'}",
            **details,
        )
    return ToolResult.text(text, **details)


def _describe(block: Any) -> str:
    match block:
        case mt.TextContent():
            return block.text
        case mt.ImageContent() | mt.AudioContent():
            kind = "image" if isinstance(block, mt.ImageContent) else "audio"
            return f"[{kind}: {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
        case mt.ResourceLink():
            return f"[resource link: {block.uri}{f' ({block.name})' if block.name else ''}]"
        case mt.EmbeddedResource():
            resource = block.resource
            if isinstance(resource, mt.TextResourceContents):
                return resource.text
            return f"[resource: {resource.uri}, {resource.mime_type or 'binary'}]"
    return f"[{getattr(block, 'type', type(block).__name__)} content]"
