"""Custom tools: shell-command templates defined at run time (seed 001 §13).

One stream holds every definition, ``tools/custom`` (:func:`events.streams.custom_tools_stream`),
so a System that opens on a log loads them all with one read, and ``clawlog tools`` lists
them. A definition is global (``agent == ""``) or belongs to one agent; defining the same
(``agent``, ``name``) again replaces it::

    tool.custom_defined   (name, agent, template, parameters, sealed env, enabled)
    tool.custom_removed   (name, agent)

**No secret enters these events.** Environment values are sealed with AES-256-GCM before
the event is built (:mod:`clawlog.tools.custom.secrets`): each :class:`SealedEnvValue`
holds the variable's name in clear and ``nonce + ciphertext`` of its value, bound to the
tool's scope, name and variable name as associated data, so a sealed value cannot be
moved to another tool or variable. ``key_id`` names the key that sealed them (a
fingerprint, not the key), so a process holding another key can say so.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..base import Event

__all__ = [
    "CUSTOM_TOOL_EVENTS",
    "EVENTS",
    "CustomToolDefined",
    "CustomToolRemoved",
    "SealedEnvValue",
]


class SealedEnvValue(msgspec.Struct, frozen=True, kw_only=True):
    """One environment variable of a custom tool, its value encrypted."""

    #: The variable's name, in clear (``API_TOKEN``): listings show it.
    name: str
    #: 12 bytes of nonce, then the AES-256-GCM ciphertext and its 16-byte tag.
    sealed: bytes


class CustomToolDefined(Event, frozen=True, tag="tool.custom_defined"):
    """A custom tool was defined, or redefined (the same ``agent`` and ``name``)."""

    #: The name the model calls it by (letters, digits, ``_`` and ``-``).
    name: str
    #: The command template: POSIX shell text with ``{{.key}}`` placeholders.
    command: str
    #: ``""``: every agent gets it; else the key of the one agent that does.
    agent: str = ""
    description: str = ""
    #: The JSON Schema of its arguments (an ``object`` schema).
    parameters: dict[str, Any] = msgspec.field(default_factory=dict)
    #: Seconds before the command is killed with its whole process group.
    timeout_s: float = 60.0
    #: An absolute folder the command runs in; ``""``: the caller's workspace, or a
    #: fresh temporary folder when the agent has none.
    working_dir: str = ""
    #: The environment variables added for the command, values sealed.
    env: list[SealedEnvValue] = msgspec.field(default_factory=list)
    #: The fingerprint of the key that sealed ``env`` (``""`` without env).
    key_id: str = ""
    #: A disabled tool is kept (and listed) but offered to no agent.
    enabled: bool = True
    #: Who defined it, as the application says (``"api"`` by default).
    by: str = ""


class CustomToolRemoved(Event, frozen=True, tag="tool.custom_removed"):
    """A custom tool was removed; no agent is offered it from now on."""

    name: str
    agent: str = ""
    by: str = ""


CUSTOM_TOOL_EVENTS: tuple[type[Event], ...] = (CustomToolDefined, CustomToolRemoved)
EVENTS = CUSTOM_TOOL_EVENTS
