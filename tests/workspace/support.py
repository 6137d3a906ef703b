"""A workspace, its stores on a real event store, and a context, for the workspace tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clawlog.events import ANY, Event, EventStore
from clawlog.tools import ToolContext, ToolResult
from clawlog.tools.workspace import (
    ContextStore,
    MemoryStore,
    WorkspaceConfig,
    WorkspaceEnv,
    workspace_tools,
)


class StoreRecorder:
    """The ``record`` port as the system provides it: append, durable, then return."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.calls: list[tuple[str, list[Event]]] = []

    async def __call__(self, stream: str, events: Sequence[Event]) -> object:
        self.calls.append((stream, list(events)))
        return await self.store.append(stream, list(events), expected_version=ANY)

    async def stream(self, name: str) -> list[Event]:
        return [r.event for r in await self.store.read_stream(name)]  # type: ignore[misc]

    async def types(self, stream: str) -> list[str]:
        return [r.type for r in await self.store.read_stream(stream)]


class Bench:
    """File tools over one workspace, called by name."""

    def __init__(self, root: Path, env: WorkspaceEnv, **ctx: Any) -> None:
        self.root = root
        self.env = env
        self.tools = {tool.name: tool for tool in workspace_tools(env)}
        values: dict[str, Any] = {
            "agent": "main",
            "session_key": "s1",
            "user": "telegram:42",
            "workspace": str(root),
        }
        values.update(ctx)
        self.ctx = ToolContext(**values)

    async def __call__(self, tool: str, **args: Any) -> ToolResult:
        return await self.tools[tool].execute(self.ctx, args)

    def as_user(self, user: str) -> Bench:
        other = Bench(self.root, self.env)
        other.tools = self.tools
        other.ctx = ToolContext(
            **{**{f: getattr(self.ctx, f) for f in self.ctx.__struct_fields__}, "user": user}
        )
        return other


def make_env(
    recorder: StoreRecorder | None = None, config: WorkspaceConfig | None = None
) -> WorkspaceEnv:
    context = ContextStore(recorder) if recorder is not None else None
    memory = MemoryStore(recorder) if recorder is not None else None
    return WorkspaceEnv(config or WorkspaceConfig(), context=context, memory=memory)
