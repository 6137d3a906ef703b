"""The tool registry (seed 004 §3, seed 001 §13): lookup, protected names, per-agent
clones, and the tool definitions a model provider receives.

Startup registration (:meth:`ToolRegistry.register_startup`) protects a tool's name;
runtime registration (:meth:`ToolRegistry.register`, e.g. MCP or custom tools) can never
shadow a protected name, nor one of :data:`PROTECTED_NAMES`. Reads take no lock: every
change swaps in a new mapping.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple, get_args

import msgspec

from clawlog.events.domain.tool import ToolDomain

from .base import Tool
from .errors import DuplicateTool, ProtectedName, UnknownTool
from .schemas import Validator, compile_validator, normalize_schema

__all__ = ["PROTECTED_NAMES", "TOOL_DOMAINS", "ToolDefinition", "ToolRegistry"]

#: The domains a call can be recorded with (``tool.call_started``).
TOOL_DOMAINS: tuple[str, ...] = get_args(ToolDomain)

#: Built-in names no runtime tool may take: seed 004 §3's 35 and seed 001's native tools.
PROTECTED_NAMES: frozenset[str] = frozenset(
    {
        "echo",
        "time",
        "json",
        "http",
        "shell",
        "read_file",
        "write_file",
        "list_dir",
        "apply_patch",
        "memory_search",
        "memory_write",
        "memory_read",
        "memory_tree",
        "create_job",
        "list_jobs",
        "job_status",
        "cancel_job",
        "job_events",
        "job_prompt",
        "tool_search",
        "tool_install",
        "tool_auth",
        "tool_activate",
        "tool_list",
        "tool_remove",
        "skill_list",
        "skill_search",
        "skill_install",
        "skill_remove",
        "routine_create",
        "routine_list",
        "routine_update",
        "routine_delete",
        "routine_history",
        "build_software",
    }
    | {
        "edit_file",
        "list_files",
        "search",
        "glob",
        "exec",
        "process",
        "web_search",
        "web_fetch",
        "memory_get",
        "sessions_list",
        "sessions_history",
        "sessions_send",
        "sessions_spawn",
        "spawn",
        "subagent",
        "subagents",
        "session_status",
        "browser",
        "canvas",
        "cron",
        "gateway",
        "message",
        "create_forum_topic",
        "delegate",
        "delegate_search",
        "evaluate_loop",
        "handoff",
        "team_tasks",
        "team_message",
        "image",
        "read_image",
        "create_image",
        "tts",
        "nodes",
    }
)


class ToolDefinition(msgspec.Struct, frozen=True, kw_only=True):
    """A tool as offered to a model, parameters normalized for its provider."""

    name: str
    description: str
    parameters: dict[str, object]


class _Entry(NamedTuple):
    tool: Tool
    validator: Validator


class ToolRegistry:
    """Name -> tool. Thread-safe; cheap to :meth:`clone` per agent."""

    def __init__(
        self, tools: Iterable[Tool] = (), *, protected: Iterable[str] = PROTECTED_NAMES
    ) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._protected: frozenset[str] = frozenset(protected)
        self._definitions: dict[tuple[str, str], ToolDefinition] = {}
        for tool in tools:
            self.register_startup(tool)

    # -- registration -------------------------------------------------------------------
    def register_startup(self, *tools: Tool) -> None:
        """Register built-in tools; their names become protected."""
        entries = [self._entry(tool) for tool in tools]
        with self._lock:
            for entry in entries:
                if entry.tool.name in self._entries:
                    raise DuplicateTool(f"a tool named {entry.tool.name!r} is already registered")
            self._commit({e.tool.name: e for e in entries})
            self._protected = self._protected | {e.tool.name for e in entries}

    def register(self, tool: Tool, *, replace: bool = False) -> None:
        """Register a tool at runtime (MCP, custom). Raises :class:`ProtectedName` for a
        protected name and :class:`DuplicateTool` for a taken one unless ``replace``."""
        entry = self._entry(tool)
        with self._lock:
            if tool.name in self._protected:
                raise ProtectedName(
                    f"{tool.name!r} is a protected built-in tool name; register it under "
                    "another name (MCP tools get a prefix such as mcp_{server}_{tool})"
                )
            if tool.name in self._entries and not replace:
                raise DuplicateTool(f"a tool named {tool.name!r} is already registered")
            self._commit({tool.name: entry})

    def unregister(self, name: str) -> Tool:
        """Remove a runtime tool and return it; protected tools stay."""
        with self._lock:
            if name in self._protected:
                raise ProtectedName(f"{name!r} is protected and cannot be unregistered")
            entry = self._entries.get(name)
            if entry is None:
                raise UnknownTool(f"no tool named {name!r}")
            entries = dict(self._entries)
            del entries[name]
            self._entries = entries
            self._definitions = {}
        return entry.tool

    def _entry(self, tool: Tool) -> _Entry:
        if not isinstance(tool, Tool):
            raise TypeError(f"{tool!r} does not implement the tools.Tool protocol")
        if not tool.name or not tool.name.replace("_", "a").replace("-", "a").isalnum():
            raise ValueError(f"invalid tool name {tool.name!r}: use letters, digits, _ and -")
        if tool.domain not in TOOL_DOMAINS:  # the log records it: refuse it here, not there
            raise ValueError(
                f"tool {tool.name!r}: domain {tool.domain!r} is not one of "
                f"{', '.join(TOOL_DOMAINS)}"
            )
        return _Entry(tool, compile_validator(tool.parameters, tool.name))

    def _commit(self, new: dict[str, _Entry]) -> None:
        self._entries = {**self._entries, **new}
        self._definitions = {}

    # -- lookup -------------------------------------------------------------------------
    def get(self, name: str) -> Tool | None:
        entry = self._entries.get(name)
        return None if entry is None else entry.tool

    def validator(self, name: str) -> Validator:
        entry = self._entries.get(name)
        if entry is None:
            raise UnknownTool(f"no tool named {name!r}")
        return entry.validator

    def names(self) -> list[str]:
        return sorted(self._entries)

    def tools(self) -> list[Tool]:
        return [e.tool for _, e in sorted(self._entries.items())]

    @property
    def protected_names(self) -> frozenset[str]:
        return self._protected

    def is_protected(self, name: str) -> bool:
        return name in self._protected

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools())

    # -- per agent and per provider -----------------------------------------------------
    def clone(self) -> ToolRegistry:
        """A copy for one agent: same tools and protected names, registered separately."""
        copy = ToolRegistry(protected=())
        with self._lock:
            copy._entries = dict(self._entries)
            copy._protected = self._protected
        return copy

    def definitions(
        self, provider: str = "", tools: Sequence[Tool] | None = None
    ) -> list[ToolDefinition]:
        """Definitions for ``tools`` (default: all) with schemas normalized for ``provider``."""
        chosen = self.tools() if tools is None else tools
        return [self._definition(tool, provider) for tool in chosen]

    def _definition(self, tool: Tool, provider: str) -> ToolDefinition:
        key = (tool.name, provider)
        cached = self._definitions.get(key)
        if cached is None or self.get(tool.name) is not tool:
            cached = ToolDefinition(
                name=tool.name,
                description=tool.description,
                parameters=normalize_schema(tool.parameters, provider),
            )
            self._definitions[key] = cached
        return cached
