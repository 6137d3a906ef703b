"""From a server's tool list to the tools agents are offered, and the ones skipped."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import mcp.types as mt

from clawlog.events.domain.mcp import McpToolInfo, McpToolSkipped
from clawlog.tools import PROTECTED_NAMES, InvalidSchema, Scrubber
from clawlog.tools.schemas import compile_validator

from .config import McpServerConfig, registered_name

__all__ = ["discover_tools"]

_MAX_DESCRIPTION = 2000


def discover_tools(
    config: McpServerConfig,
    listed: Iterable[mt.Tool],
    scrubber: Scrubber | None = None,
    protected: frozenset[str] = PROTECTED_NAMES,
) -> tuple[list[McpToolInfo], list[McpToolSkipped]]:
    """Name each tool ``{prefix}_{tool}``; skip those that would shadow a built-in, that
    collide after name cleaning, or whose input schema is not valid JSON Schema."""
    scrub = (scrubber or Scrubber()).scrub
    offered: list[McpToolInfo] = []
    skipped: list[McpToolSkipped] = []
    taken: dict[str, str] = {}
    for tool in listed:
        name = registered_name(config.prefix, tool.name)
        reason = _problem(tool, name, taken, protected)
        if reason:
            skipped.append(McpToolSkipped(name=tool.name, registered_name=name, reason=reason))
            continue
        taken[name] = tool.name
        offered.append(_info(tool, name, scrub))
    return offered, skipped


def _problem(tool: mt.Tool, name: str, taken: dict[str, str], protected: frozenset[str]) -> str:
    if name in protected:
        return f"{name!r} would shadow a built-in tool"
    if name in taken:
        return f"{name!r} is already the name of the server's tool {taken[name]!r}"
    try:
        compile_validator(_schema(tool), name)
    except InvalidSchema as exc:
        return f"its input schema is not valid JSON Schema ({exc})"
    return ""


def _schema(tool: mt.Tool) -> dict[str, Any]:
    schema = dict(tool.input_schema or {})
    schema.setdefault("type", "object")
    return schema


def _info(tool: mt.Tool, name: str, scrub: Any) -> McpToolInfo:
    hints = tool.annotations
    destructive = hints.destructive_hint if hints is not None else None
    return McpToolInfo(
        name=tool.name,
        registered_name=name,
        description=scrub((tool.description or "")[:_MAX_DESCRIPTION]),
        title=tool.title or (hints.title if hints is not None and hints.title else ""),
        input_schema=_schema(tool),
        read_only=hints.read_only_hint if hints is not None else None,
        destructive=destructive,
        idempotent=hints.idempotent_hint if hints is not None else None,
        open_world=hints.open_world_hint if hints is not None else None,
        requires_approval=destructive is True,
    )
