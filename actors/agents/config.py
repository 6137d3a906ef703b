"""Agent configuration, as registered through the System API."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import msgspec

from clawlog.tools.approvals import ApprovalConfig
from clawlog.tools.ratelimit import RateLimitConfig

from ..errors import InvalidArgument
from ..providers.base import TOOL_CHOICE_MODES
from .budgets import Budgets
from .compaction_config import CompactionConfig
from .routine_config import CronLimits, HeartbeatConfig

if TYPE_CHECKING:
    from .gateway import ToolGateway

__all__ = [
    "AgentConfig",
    "QualityGate",
    "SubagentLimits",
    "check_tool_choice_offered",
    "validate_agent_key",
]

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
    #: How long a model reply whose calls only read (``side_effects = "none"``: running
    #: them again after a crash does nothing) waits, with its calls' starts, for their
    #: results, and then for the next replies while their steps only read too: what comes
    #: in time shares one commit; what is held when it runs out (calls still running, a
    #: request still out) is appended then, so a reader of the log sees it. 0: the
    #: starts are appended before the calls run, as for calls with effects
    #: (.staged_append).
    read_hold_s: float = 0.05
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
    #: Wake the agent periodically with its HEARTBEAT.md (actors.automation); None: never.
    heartbeat: HeartbeatConfig | None = None
    #: What the ``cron`` tool lets the agent schedule for itself (actors.automation).
    cron: CronLimits = msgspec.field(default_factory=CronLimits)
    #: The model's context window in tokens, in place of the model catalog's
    #: (``System.open(model_catalog=...)``); None: the catalog's.
    context_window: int | None = None
    #: When and how sessions compact their conversation (actors.agents.compaction).
    compaction: CompactionConfig = msgspec.field(default_factory=CompactionConfig)
    #: Whether and which tool the model must call, on the requests of every turn: None,
    #: the provider's default (it may call tools); "auto": it may; "none": it must not;
    #: "required": it must call one; a tool's name: it must call that tool (one the agent
    #: has when it is registered, checked then).
    tool_choice: str | None = None
    #: After the model called a tool in a turn, the turn's next requests go with the
    #: provider's default: a model made to call a tool on every request could never give
    #: its answer, and each turn would end at ``max_iterations`` (the OpenAI Agents SDK's
    #: ``reset_tool_choice``). False: ``tool_choice`` goes with every request of the turn.
    reset_tool_choice: bool = True

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
        if self.tool_choice is not None:
            if not isinstance(self.tool_choice, str):
                raise TypeError(
                    "AgentConfig.tool_choice must be a str or None, not "
                    f"{type(self.tool_choice).__name__}"
                )
            if not self.tool_choice.strip():
                raise ValueError(
                    f"AgentConfig.tool_choice must be None, one of {', '.join(TOOL_CHOICE_MODES)} "
                    "or a tool's name, not an empty string"
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
        if not (self.read_hold_s >= 0 and math.isfinite(self.read_hold_s)):
            raise ValueError("read_hold_s must be a finite number of seconds, 0 or more")


def check_tool_choice_offered(config: AgentConfig, gateway: ToolGateway) -> None:
    """Refuse a ``config.tool_choice`` that asks for a tool the agent does not have, or
    for a tool when it has none (``System.register_agent``: nothing is recorded then).

    Its tools are those its gateway offers a session at the top level (to an owner, when
    it has owners): a tool only subagents or other users lack still passes here, and a
    request that does not offer it fails as the provider's bad request."""
    choice = config.tool_choice
    if choice is None or choice in ("auto", "none"):
        return
    from .gateway import CallerContext  # the gateway's module imports providers, not us

    owner = config.owner_ids[0] if config.owner_ids else ""
    context = CallerContext(agent=config.key, session_key="register", user=owner)
    offered: Sequence[str] = [spec.name for spec in gateway.specs(context)]
    if choice == "required":
        if not offered:
            raise InvalidArgument(
                "config",
                f"tool_choice='required' but agent {config.key!r} has no tools: give it "
                "tools, or use 'auto' or 'none'",
            )
        return
    if choice not in offered:
        names = ", ".join(sorted(offered)) or "none"
        raise InvalidArgument(
            "config",
            f"tool_choice={choice!r} is none of {', '.join(TOOL_CHOICE_MODES)} and no tool "
            f"agent {config.key!r} has (its tools: {names})",
        )
