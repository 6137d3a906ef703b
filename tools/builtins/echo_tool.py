"""``echo``: returns its input unchanged, for testing the tool plumbing (seed 004 §4.1)."""

from __future__ import annotations

from typing import Any, ClassVar

from ..base import BaseTool
from ..context import ToolContext
from ..result import ToolResult

__all__ = ["EchoTool"]


class EchoTool(BaseTool):
    name = "echo"
    side_effects = "none"
    description = "Return the message unchanged. Useful for testing tool calls."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"message": {"type": "string", "description": "The message to echo back"}},
        "required": ["message"],
    }
    # The input is under the agent's control: nothing from outside to neutralize.
    requires_sanitization = False

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        return ToolResult.text(args["message"])
