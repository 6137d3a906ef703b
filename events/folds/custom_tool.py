"""The fold of ``tools/custom``: which custom tools are defined now, and since which
position.

    definitions = CustomToolDefinitions()
    for recorded in await store.read_stream(custom_tools_stream()):
        definitions.apply(recorded)
    definitions.visible_to("main")   # the global ones and main's own

The System folds it to give agents their custom tools (``clawlog.tools.custom``), and
``clawlog tools`` folds it to list them, so both follow one set of rules.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..domain.custom_tool import CustomToolDefined, CustomToolRemoved
from ..envelope import RecordedEvent

__all__ = ["GROUP", "CustomToolDefinitions", "CustomToolEntry", "scope_of"]

#: The policy group every custom tool is in (``tools_deny=["group:custom"]``).
GROUP = "custom"


def scope_of(agent: str) -> str:
    """``global``, or ``agent:{key}`` for a tool of one agent."""
    return f"agent:{agent}" if agent else "global"


class CustomToolEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One custom tool as the log defines it now: everything but its env values."""

    name: str
    #: ``""`` for a global tool, else the one agent that gets it.
    agent: str
    #: ``global`` or ``agent:{key}``.
    scope: str
    group: str
    description: str
    parameters: dict[str, Any]
    command: str
    timeout_s: float
    working_dir: str
    #: The names of its environment variables, sorted (their values are never shown).
    env: list[str]
    enabled: bool
    #: The log position of the ``tool.custom_defined`` event in force, and its time.
    position: int
    recorded_at: float
    by: str
    #: The definition event itself (its env values sealed): what builds the tool.
    definition: CustomToolDefined

    def to_dict(self) -> dict[str, Any]:
        """The fields a listing shows (``--json``), the sealed definition left out."""
        shown = msgspec.structs.asdict(self)
        del shown["definition"]
        return shown

    def __repr__(self) -> str:
        # What ``print(system.custom_tools())`` shows: env names, not the sealed bytes.
        fields = ", ".join(f"{name}={value!r}" for name, value in self.to_dict().items())
        return f"CustomToolEntry({fields})"


class CustomToolDefinitions:
    """The custom tools in force, by (agent, name). Not thread-safe: its owner locks."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], CustomToolEntry] = {}
        #: The version of ``tools/custom`` folded so far (its next append expects it).
        self.version = 0

    def apply(self, recorded: RecordedEvent) -> None:
        """Fold one recorded event of the stream (other events are ignored)."""
        self.version = max(self.version, recorded.version)
        event = recorded.event
        if isinstance(event, CustomToolDefined):
            self._entries[(event.agent, event.name)] = CustomToolEntry(
                name=event.name,
                agent=event.agent,
                scope=scope_of(event.agent),
                group=GROUP,
                description=event.description,
                parameters=event.parameters,
                command=event.command,
                timeout_s=event.timeout_s,
                working_dir=event.working_dir,
                env=sorted(value.name for value in event.env),
                enabled=event.enabled,
                position=recorded.position,
                recorded_at=recorded.recorded_at,
                by=event.by,
                definition=event,
            )
        elif isinstance(event, CustomToolRemoved):
            self._entries.pop((event.agent, event.name), None)

    def get(self, name: str, agent: str = "") -> CustomToolEntry | None:
        """The tool ``name`` of that scope (``agent=""``: the global one)."""
        return self._entries.get((agent, name))

    def entries(self) -> list[CustomToolEntry]:
        """Every tool in force, global ones first, then by agent and name."""
        return [self._entries[key] for key in sorted(self._entries)]

    def visible_to(self, agent: str) -> list[CustomToolEntry]:
        """The tools ``agent`` gets if enabled: the global ones and its own."""
        return [e for e in self.entries() if e.agent in ("", agent)]

    def named(self, name: str) -> list[CustomToolEntry]:
        """Every scope's tool called ``name``."""
        return [e for e in self.entries() if e.name == name]
