"""Tools, clocks and contexts shared by the tool-system tests."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from clawlog.tools import BaseTool, ToolContext, ToolResult


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class CountingTool(BaseTool):
    """Records every execution; answers ``ran {n}``."""

    parameters = {
        "type": "object",
        "properties": {"text": {"type": "string"}, "count": {"type": "integer", "minimum": 0}},
    }

    def __init__(self, name: str = "counter", **attributes: Any) -> None:
        self.name = name  # type: ignore[misc]
        for key, value in attributes.items():
            setattr(self, key, value)
        self.calls: list[dict[str, Any]] = []

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        self.calls.append(args)
        return ToolResult.text(f"ran {len(self.calls)}")


class NamedTool(BaseTool):
    """A do-nothing tool with a given name and group (policy tests)."""

    def __init__(self, name: str, group: str = "", owner_only: bool = False) -> None:
        self.name = name  # type: ignore[misc]
        self.group = group  # type: ignore[misc]
        self.owner_only = owner_only  # type: ignore[misc]

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        return ToolResult.text(self.name)


class ShellTool(BaseTool):
    """A command tool that never runs anything: it records the commands it got."""

    name = "exec"
    group = "runtime"
    domain = "container"
    parameters = {
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "security": {"type": "string", "enum": ["deny", "allowlist", "full"]},
            "ask": {"type": "string", "enum": ["off", "on-miss", "always"]},
        },
        "required": ["command"],
    }

    def __init__(self, dangerous: tuple[str, ...] = ("git push --force",)) -> None:
        self.dangerous = dangerous
        self.commands: list[str] = []

    def requires_approval_for(self, args: Mapping[str, Any]) -> bool:
        return any(d in str(args.get("command", "")) for d in self.dangerous)

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        self.commands.append(args["command"])
        return ToolResult.text(f"$ {args['command']}\nok")


class BlockingTool(BaseTool):
    """Waits until released (or cancelled): for timeouts."""

    name = "blocker"
    timeout = 0.05

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.cancelled = False

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return ToolResult.text("released")


def context(**overrides: Any) -> ToolContext:
    values: dict[str, Any] = {"agent": "main", "session_key": "s1", "user": "telegram:42"}
    values.update(overrides)
    return ToolContext(**values)
