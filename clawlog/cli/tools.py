"""``clawlog tools``: the custom tools the log defines now (seed 001 §13), folded from
``tools/custom`` with the fold the System uses (``events.folds.custom_tool``): name,
scope (``global`` or ``agent:KEY``), policy group, enabled, the command template, the
parameters, the env variables' NAMES (their values are sealed in the log and never
shown), the timeout and the position that defined it. ``--agent KEY``: only the tools
that agent gets (the global ones and its own). The stream is read page by page."""

from __future__ import annotations

from typing import Any

from clawlog.events import EventStore
from clawlog.events.folds.custom_tool import CustomToolDefinitions, CustomToolEntry
from clawlog.events.streams import custom_tools_stream

from .listing import Listing, listing_format
from .points import EVERY_ROW, Window
from .render import utc_time

__all__ = ["TOOL_COLUMNS", "tool_row", "tools"]

TOOL_COLUMNS = (
    "tool",
    "scope",
    "group",
    "enabled",
    "command",
    "parameters",
    "env",
    "timeout",
    "defined at",
    "since",
)
_PAGE = 500


async def tools(
    store: EventStore,
    *,
    agent: str | None = None,
    as_json: bool = False,
    window: Window = EVERY_ROW,
) -> None:
    """Print the custom tools in force (all, or those ``agent`` gets); ``window``: only
    those defined from a position or time on, at most ``limit`` of them."""
    definitions = CustomToolDefinitions()
    async for recorded in store.iter_stream(custom_tools_stream(), page_size=_PAGE):
        definitions.apply(recorded)
    entries = definitions.visible_to(agent) if agent else definitions.entries()
    since = window.since
    if since is not None and since.position is not None:
        entries = [e for e in entries if e.position >= since.position]
    elif since is not None and since.time is not None:
        entries = [e for e in entries if e.recorded_at >= since.time]
    if window.limit:
        entries = entries[: window.limit]
    title = f"custom tools of agent {agent}" if agent else "custom tools"
    empty = f"no custom tools for agent {agent!r}" if agent else "no custom tools in this log"
    with Listing(title, TOOL_COLUMNS, listing_format(as_json), empty=empty) as listing:
        for entry in entries:
            listing.add(tool_row(entry), entry.to_dict())


def tool_row(entry: CustomToolEntry) -> list[Any]:
    """``parameters``: each property with its type, ``*`` when required."""
    return [
        entry.name,
        entry.scope,
        entry.group,
        "yes" if entry.enabled else "no",
        entry.command,
        _parameters(entry.parameters),
        ", ".join(entry.env),
        f"{entry.timeout_s:g} s",
        entry.position,
        utc_time(entry.recorded_at),
    ]


def _parameters(schema: dict[str, Any]) -> str:
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    shown = []
    for name, spec in properties.items():
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        kind = "|".join(kind) if isinstance(kind, list) else str(kind)
        shown.append(f"{name}: {kind}{'*' if name in required else ''}")
    return ", ".join(shown)
