"""An agent's tool gateway with the MCP tools it may use.

The agent's pipeline registry receives every server's tools at runtime (``register``,
which never lets one shadow a protected built-in name), kept in step with the servers'
published views (:class:`~actors.mcp.views.ServerViews`).
Which of them a session sees is decided per call: the caller's context gets a
per-request allow list of every native tool plus the MCP tools granted to its (agent,
user) on servers that are up, so the pipeline's policy step offers and refuses them like
any other tool, and records the refusal.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable
from typing import Any

import msgspec

from clawlog.events.logging import get_logger
from clawlog.tools import DuplicateTool, ProtectedName, ToolContext, UnknownTool

from ..agents.config import AgentConfig
from ..agents.gateway import CallerContext
from ..agents.pipeline_gateway import PipelineGateway
from .tool import McpTool
from .views import ServerViews

__all__ = ["McpGateway"]

#: ``group:native`` in an allow list matches every tool that is not an MCP tool.
_NATIVE = "group:native"
_log = get_logger(__name__)


class McpGateway(PipelineGateway):
    """A :class:`PipelineGateway` whose sessions see their granted MCP tools."""

    def __init__(
        self, config: AgentConfig, tools: Iterable[Any], *, views: ServerViews, **kwargs: Any
    ) -> None:
        super().__init__(config, tools, **kwargs)
        self.views = views
        self._sync_lock = threading.Lock()
        self._synced = -1
        self._mine: dict[str, McpTool] = {}

    @classmethod
    def wrap(cls, base: PipelineGateway, views: ServerViews) -> McpGateway:
        """Share ``base``'s pipeline (its registry, policy, approvals and limits)."""
        return cls(base.config, (), views=views, services=base.services, pipeline=base.pipeline)

    def context(self, ctx: CallerContext) -> ToolContext:
        self._sync()
        base = super().context(ctx)
        if base.request_allow is not None:
            # Another layer restricted this request already: never widen it.
            return base
        visible = [tool.name for tool in self.views.tools_for(ctx.agent, ctx.user)]
        return msgspec.structs.replace(base, request_allow=(_NATIVE, *visible))

    def read_event(self, event: Any, position: int | None = None) -> Any:
        self._sync()  # a restored approval may name an MCP tool
        return super().read_event(event, position)

    def _sync(self) -> None:
        """Register new and changed MCP tools, unregister vanished ones."""
        if self.views.version == self._synced:
            return
        with self._sync_lock:
            version = self.views.version
            if version == self._synced:
                return
            current = {tool.name: tool for tool in self.views.all_tools()}
            registry = self.pipeline.registry
            for name, tool in current.items():
                if self._mine.get(name) is tool:
                    continue
                try:
                    registry.register(tool, replace=name in self._mine)
                except (ProtectedName, DuplicateTool) as exc:
                    _log.warning("MCP tool not registered", tool=name, error=str(exc))
                    continue
                self._mine[name] = tool
            for name in [n for n in self._mine if n not in current]:
                del self._mine[name]
                with contextlib.suppress(UnknownTool):
                    registry.unregister(name)
            self._synced = version
