"""Agents, handoff routes and subagent tasks."""

from __future__ import annotations

from typing import Any

import msgspec

from ..base import Event

__all__ = [
    "EVENTS",
    "AgentRegistered",
    "HandoffCleared",
    "HandoffRouted",
    "SubagentAnnounced",
    "SubagentArchived",
    "SubagentFinished",
    "SubagentSpawned",
    "SubagentSteered",
]


class AgentRegistered(Event, tag="agent.registered"):
    """An agent's configuration (first registration or a change). Secrets never appear."""

    key: str
    config: dict[str, Any] = msgspec.field(default_factory=dict)


class HandoffRouted(Event, tag="handoff.routed"):
    """Messages on (channel, chat_id) now go to ``to_agent`` (stream ``handoff/{channel}/{chat}``)."""

    channel: str
    chat_id: str
    from_agent: str
    to_agent: str
    reason: str = ""
    session_key: str = ""


class HandoffCleared(Event, tag="handoff.cleared"):
    channel: str
    chat_id: str
    agent: str
    back_to: str = ""


class SubagentSpawned(Event, tag="subagent.spawned"):
    """Written to the parent session's stream when a subagent task is accepted."""

    task_id: str
    agent: str
    parent_session: str
    task: str
    label: str = ""
    depth: int = 1
    mode: str = "async"


class SubagentFinished(Event, tag="subagent.finished"):
    """Written to the parent session's stream: completed | failed | cancelled."""

    task_id: str
    status: str
    result: str = ""
    error: str = ""
    iterations: int = 0


class SubagentSteered(Event, tag="subagent.steered"):
    task_id: str
    new_task_id: str
    message: str


class SubagentAnnounced(Event, tag="subagent.announced"):
    """Finished subagent results delivered to the parent in one (debounced) message."""

    task_ids: list[str]
    text: str


class SubagentArchived(Event, tag="subagent.archived"):
    task_id: str


EVENTS = (
    AgentRegistered,
    HandoffRouted,
    HandoffCleared,
    SubagentSpawned,
    SubagentFinished,
    SubagentSteered,
    SubagentAnnounced,
    SubagentArchived,
)
