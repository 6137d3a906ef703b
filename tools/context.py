"""The per-call values every tool sees (seed 000 §1): immutable, so one tool instance can
serve many concurrent calls safely."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["ToolContext"]


class ToolContext(msgspec.Struct, frozen=True, kw_only=True):
    """Who is calling, from where. Built by the caller (the Session) for every call."""

    #: The agent whose session makes the call.
    agent: str
    #: The session key within that agent (``session/{agent}/{session_key}`` is its stream).
    session_key: str
    #: The channel and chat the conversation is on (``telegram``, ``-100123``).
    channel: str = ""
    chat_id: str = ""
    #: ``direct`` for one-to-one chats, ``group`` for group chats (policy step 7 applies).
    peer_kind: Literal["direct", "group"] = "direct"
    #: The person the turn is for, as the channel names them (``telegram:123456``).
    user: str = ""
    #: True when the sender is the owner: owner-only tools are removed for everyone else.
    is_owner: bool = False
    #: Names the sandbox container for container-domain tools; defaults to the session.
    sandbox_key: str = ""
    #: The workspace directory file and shell tools work in.
    workspace: str | None = None
    #: 0 for a top-level session; a subagent spawned by it is at depth 1, and so on.
    depth: int = 0
    #: The deepest a subagent may be (seed 001 §6 MaxSpawnDepth); at it, leaf deny applies.
    max_depth: int = 1
    #: The user turn or job the call belongs to (recorded as the events' correlation id).
    correlation_id: str = ""
    #: The model provider of the session (``openai``, ``anthropic``, ``gemini``).
    provider: str = ""
    #: A per-request allow list (channel metadata, e.g. a forum topic): the final
    #: intersection of the policy. None: no restriction; empty: no tool at all.
    request_allow: tuple[str, ...] | None = None
    #: The key of this call, stable across a restart (``tools.side_effects``): a tool
    #: whose effect is outside clawlog dedupes on it. Set for every call the pipeline runs
    #: (from the agent, session key, correlation id and call id) unless the caller set it.
    idempotency_key: str = ""
    #: Ports to the rest of the system (spawn, delegate, handoff…), by name. Tools reach
    #: actors only through these (DESIGN: ``tools`` never imports ``actors``).
    ports: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def session_id(self) -> str:
        """``{agent}/{session_key}``: the key of per-session limits and loop history."""
        return f"{self.agent}/{self.session_key}"

    @property
    def is_subagent(self) -> bool:
        return self.depth > 0

    @property
    def effective_sandbox_key(self) -> str:
        return self.sandbox_key or self.session_id
