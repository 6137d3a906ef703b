"""Agent configuration, as registered through the System API."""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from clawlog.tools.approvals import ApprovalConfig
from clawlog.tools.ratelimit import RateLimitConfig

from .budgets import Budgets
from .compaction_config import CompactionConfig

__all__ = ["AgentConfig", "QualityGate", "SubagentLimits", "validate_agent_key"]

_KEY = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


def validate_agent_key(key: object) -> str:
    if not isinstance(key, str) or _KEY.fullmatch(key) is None:
        raise ValueError(
            f"invalid agent key {key!r}: use 1-64 characters of a-z 0-9 _ . - "
            "starting with a letter or digit"
        )
    return key


class SubagentLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 001 §6 defaults."""

    max_concurrent: int = 8
    max_spawn_depth: int = 1
    max_children_per_agent: int = 5
    max_iterations: int = 20
    archive_after_minutes: float = 60.0
    #: Finished results arriving within this window are announced to the parent together.
    announce_debounce_s: float = 0.5


class QualityGate(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 001 §11: validate output before it reaches the user."""

    #: The event that triggers it, e.g. "delegation.completed".
    event: str = "delegation.completed"
    #: command: exit 0 passes, stderr is the feedback | agent: a reviewer's APPROVED/REJECTED
    type: Literal["command", "agent"] = "agent"
    command: str = ""
    agent: str = ""
    criteria: str = ""
    block_on_failure: bool = True
    max_retries: int = 2
    timeout_s: float = 120.0


class AgentConfig(msgspec.Struct, frozen=True, kw_only=True):
    """One agent. ``kind`` decides context-file routing (seed 001 §3): ``open`` agents keep
    every context file per user; ``predefined`` agents only USER.md."""

    key: str
    name: str = ""
    description: str = ""
    kind: Literal["open", "predefined"] = "predefined"
    #: The base instructions, before the context files.
    instructions: str = "You are a helpful assistant."
    #: Agent-level context files (SOUL.md, IDENTITY.md, AGENTS.md, TOOLS.md, ...).
    context_files: dict[str, str] = msgspec.field(default_factory=dict)
    #: Tool policy (seed 001 §5): profile, then allow / deny / also-allow lists.
    tool_profile: str = "full"
    tools_allow: list[str] | None = None
    tools_deny: list[str] = msgspec.field(default_factory=list)
    tools_also_allow: list[str] = msgspec.field(default_factory=list)
    owner_ids: list[str] = msgspec.field(default_factory=list)
    workspace: str | None = None
    max_iterations: int = 20
    #: A Session actor with nothing to do stops after this long (passivation).
    idle_timeout_s: float = 300.0
    max_tokens: int = 4096
    subagents: SubagentLimits = msgspec.field(default_factory=SubagentLimits)
    #: Delegations this agent may run at once, from all sources together (seed 001 §7).
    max_delegation_load: int = 5
    #: How long a delegation to this agent may take before it counts as failed.
    delegation_deadline_s: float = 300.0
    quality_gates: list[QualityGate] = msgspec.field(default_factory=list)
    #: This agent's approval configuration of tool calls, in place of the System-wide
    #: one (``System.open(approvals=...)``) when set; recorded with the rest of the config.
    approvals: ApprovalConfig | None = None
    #: This agent's budgets (actors.agents.budgets), in place of the System-wide ones
    #: (``System.open(budgets=...)``) when set.
    budgets: Budgets | None = None
    #: This agent's tool-call rate limits (tools.ratelimit); None: none, as in seed 001
    #: ("when configured"). Seed 004's 60 a minute and 1000 an hour per user and tool:
    #: ``RateLimitConfig(user_tool=SUGGESTED_USER_TOOL_WINDOWS)``.
    rate_limits: RateLimitConfig | None = None
    #: The model's context window in tokens, in place of the model catalog's
    #: (``System.open(model_catalog=...)``); None: the catalog's.
    context_window: int | None = None
    #: When and how sessions compact their conversation (actors.agents.compaction).
    compaction: CompactionConfig = msgspec.field(default_factory=CompactionConfig)

    def __post_init__(self) -> None:
        validate_agent_key(self.key)
        if self.approvals is not None and not isinstance(self.approvals, ApprovalConfig):
            raise TypeError(
                "AgentConfig.approvals must be a clawlog.ApprovalConfig or None, not "
                f"{type(self.approvals).__name__}"
            )
        if self.budgets is not None and not isinstance(self.budgets, Budgets):
            raise TypeError(
                "AgentConfig.budgets must be a clawlog Budgets or None, not "
                f"{type(self.budgets).__name__}"
            )
        if self.rate_limits is not None and not isinstance(self.rate_limits, RateLimitConfig):
            raise TypeError(
                "AgentConfig.rate_limits must be a clawlog RateLimitConfig or None, not "
                f"{type(self.rate_limits).__name__}"
            )
        if not isinstance(self.compaction, CompactionConfig):
            raise TypeError(
                "AgentConfig.compaction must be a clawlog CompactionConfig, not "
                f"{type(self.compaction).__name__}"
            )
        if self.max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        if self.context_window is not None and self.context_window <= self.max_tokens:
            raise ValueError(
                f"context_window ({self.context_window}) must be more than max_tokens "
                f"({self.max_tokens}): the prompt needs room beside the reply"
            )
        if self.idle_timeout_s <= 0:
            raise ValueError("idle_timeout_s must be positive")
