"""Agents, handoff routes and subagent tasks."""

from __future__ import annotations

from typing import Any, Literal

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
    "SubagentMode",
    "SubagentOutcome",
    "SubagentRefused",
    "SubagentSpawned",
    "SubagentStatus",
    "SubagentSteered",
]

#: async: the spawning tool returns at once and the result is announced later; sync: the
#: spawning tool waits for the result.
SubagentMode = Literal["async", "sync"]
#: How a subagent task ended.
SubagentOutcome = Literal["completed", "failed", "cancelled"]
#: A subagent task: running until ``subagent.finished``, then how it ended.
SubagentStatus = Literal["running", SubagentOutcome]


class AgentRegistered(Event, frozen=True, tag="agent.registered"):
    """An agent's configuration (first registration or a change). Secrets never appear."""

    key: str
    config: dict[str, Any] = msgspec.field(default_factory=dict)


class HandoffRouted(Event, frozen=True, tag="handoff.routed"):
    """Messages on (channel, chat_id) now go to ``to_agent`` (``handoff/{channel}/{chat}``)."""

    channel: str
    chat_id: str
    from_agent: str
    to_agent: str
    reason: str = ""
    session_key: str = ""
    #: The handoff tool call that asked ("" in logs written before lineage).
    call_id: str = ""


class HandoffCleared(Event, frozen=True, tag="handoff.cleared"):
    channel: str
    chat_id: str
    agent: str
    back_to: str = ""


class SubagentSpawned(Event, frozen=True, tag="subagent.spawned"):
    """On ``agent/{key}``: a subagent task was accepted (its own stream is ``subagent/{id}``)."""

    task_id: str
    parent_session: str
    task: str
    label: str = ""
    depth: int = 1
    mode: SubagentMode = "async"
    at: float = 0.0
    #: The parent's session key (its stream is ``parent_session``).
    parent_key: str = ""
    #: The tool call in the parent session that asked ("" in logs written before lineage).
    call_id: str = ""


class SubagentRefused(Event, frozen=True, tag="subagent.refused"):
    """On ``agent/{key}``: a spawn was refused by a limit."""

    parent_session: str
    reason: str
    task: str = ""


class SubagentFinished(Event, frozen=True, tag="subagent.finished"):
    """On ``agent/{key}``: a subagent task ended."""

    task_id: str
    status: SubagentOutcome
    result: str = ""
    error: str = ""
    at: float = 0.0


class SubagentSteered(Event, frozen=True, tag="subagent.steered"):
    task_id: str
    new_task_id: str
    message: str


class SubagentAnnounced(Event, frozen=True, tag="subagent.announced"):
    """On ``agent/{key}``: finished results sent to the parent session in one message."""

    parent_session: str
    task_ids: list[str]
    #: The parent session's turn that delivers them (its ``session.turn_started`` names
    #: this turn id); "" in logs written before lineage.
    turn_id: str = ""


class SubagentArchived(Event, frozen=True, tag="subagent.archived"):
    task_id: str


EVENTS = (
    AgentRegistered,
    HandoffRouted,
    HandoffCleared,
    SubagentSpawned,
    SubagentRefused,
    SubagentFinished,
    SubagentSteered,
    SubagentAnnounced,
    SubagentArchived,
)
