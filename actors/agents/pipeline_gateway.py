"""The Session's tool gateway over :class:`tools.ToolPipeline`.

It turns a :class:`CallerContext` into a :class:`tools.ToolContext` (the actor ports ride
in ``ports``), wraps the actor-driving tools as ``tools`` Tools, maps the pipeline's
decisions to :class:`CallStep` values, and folds the tool events a Session applies into
the pipeline's approval state (allow-always lists survive restarts that way).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import msgspec

from clawlog.events import Event
from clawlog.events.domain.session import ChatMessage, ToolCall
from clawlog.events.domain.tool import (
    ApprovalOutcome,
    ToolAllowlistChanged,
    ToolApprovalDecided,
    ToolApprovalRequested,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallRefused,
    ToolDomain,
)
from clawlog.tools import (
    ApprovalConfig,
    ExecutionFailed,
    PolicyConfig,
    ToolContext,
    ToolPipeline,
    ToolPolicy,
    ToolRegistry,
    ToolResult,
)
from clawlog.tools.decisions import NeedsApproval, Ready, Refused
from clawlog.tools.finish import DEFAULT_MAX_RESULT_CHARS
from clawlog.tools.policy import PolicyEngine
from clawlog.tools.ratelimit import RateLimiter
from clawlog.tools.registry import ToolDefinition
from clawlog.tools.side_effects import SideEffects, call_side_effects

from ..errors import Rejected
from ..providers.base import ToolSpec
from .config import AgentConfig
from .gateway import CallerContext, CallResult, CallStep

__all__ = ["ActorToolAdapter", "PipelineGateway", "policy_for"]

#: What the pipeline folds: approvals, the allowlist, and the events that end a call.
_PIPELINE_EVENTS = (
    ToolApprovalDecided,
    ToolAllowlistChanged,
    ToolApprovalRequested,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallRefused,
)


class ActorToolAdapter:
    """An :class:`ActorTool` as a ``tools`` Tool; its ``Rejected`` becomes a tool error."""

    timeout = 600.0
    domain: ClassVar[ToolDomain] = "orchestrator"
    owner_only = False
    requires_sanitization = False
    requires_approval = False

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.description = inner.description
        self.parameters = inner.parameters
        self.group = inner.group

    def requires_approval_for(self, args: Any) -> bool:
        return False

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        try:
            return ToolResult.text(await self.inner.run(ctx.ports["caller"], args))
        except Rejected as exc:
            raise ExecutionFailed(str(exc)) from exc


def policy_for(config: AgentConfig, base: PolicyConfig | None = None) -> PolicyConfig:
    """The agent's tool policy (profile, allow, deny, also-allow) inside a policy config."""
    base = base or PolicyConfig()
    agent = ToolPolicy(
        profile=config.tool_profile,
        allow=config.tools_allow,
        also_allow=list(config.tools_also_allow),
        deny=list(config.tools_deny),
    )
    return PolicyConfig(
        tools=base.tools,
        agents={**base.agents, config.key: agent},
        chat_groups=base.chat_groups,
        subagent_deny=base.subagent_deny,
        leaf_deny=base.leaf_deny,
        owner_only=base.owner_only,
        users=base.users,
    )


#: Specs kept by a gateway before it starts over (a registry holds one definition per
#: tool and provider).
_MAX_SPECS = 1024


class PipelineGateway:
    def __init__(
        self,
        config: AgentConfig,
        tools: Iterable[Any],
        *,
        services: dict[str, Any] | None = None,
        policy: PolicyConfig | None = None,
        approvals: ApprovalConfig | None = None,
        pipeline: ToolPipeline | None = None,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        self.config = config
        self.services = services or {}
        limits = config.rate_limits  # None: no limit (tools.ratelimit)
        self.pipeline = pipeline or ToolPipeline(
            ToolRegistry(tools),
            policy=PolicyEngine(policy_for(config, policy)),
            rate_limiter=RateLimiter(limits) if limits is not None else None,
            approval_config=approvals,
            max_result_chars=max_result_chars,
        )
        #: The spec made of each tool definition (the registry caches those per tool and
        #: provider), so a model request does not rebuild every spec: see :meth:`specs`.
        self._specs: dict[int, tuple[ToolDefinition, ToolSpec]] = {}
        for tool in self.pipeline.registry.tools():  # its keys: redacted from all it records
            if callable(share := getattr(tool, "share_secrets", None)):
                share(self.pipeline.scrubber)

    def context(self, ctx: CallerContext) -> ToolContext:
        return ToolContext(
            agent=ctx.agent,
            session_key=ctx.session_key,
            channel=ctx.channel,
            chat_id=ctx.chat_id,
            user=ctx.user,
            is_owner=ctx.user in self.config.owner_ids,
            workspace=ctx.workspace,
            depth=ctx.depth,
            max_depth=self.config.subagents.max_spawn_depth,
            correlation_id=ctx.correlation_id,
            provider=ctx.provider,
            ports={**self.services, "caller": ctx},
        )

    def specs(self, ctx: CallerContext) -> list[ToolSpec]:
        """The tools ``ctx`` may use, as offered to the model. Each model request asks, so
        the spec of a definition is made once (building them all was the largest single
        cost of a request in the agents benchmark's profile); a definition the registry
        replaced gets a new one."""
        made, specs = self._specs, []
        for definition in self.pipeline.definitions(self.context(ctx)):
            entry = made.get(id(definition))
            if entry is None or entry[0] is not definition:
                if len(made) >= _MAX_SPECS:
                    made.clear()
                spec = ToolSpec(
                    name=definition.name,
                    description=definition.description,
                    parameters=dict(definition.parameters),
                )
                entry = made[id(definition)] = (definition, spec)
            specs.append(entry[1])
        return specs

    def begin(self, ctx: CallerContext, call: ToolCall) -> CallStep:
        # The tools that drive actors see which call they are (the message tool records it).
        context = self.context(msgspec.structs.replace(ctx, call_id=call.id))
        decision = self.pipeline.begin(context, call.id, call.name, call.arguments)
        return _step(decision)

    async def run(self, ticket: Any) -> CallResult:
        outcome = await self.pipeline.execute(ticket)
        return CallResult(events=list(outcome.events))

    def decide(
        self, ctx: CallerContext, ticket: Any, decision: ApprovalOutcome, by: str
    ) -> CallStep:
        return _step(self.pipeline.decide_approval(ticket, decision, by))

    def interrupted(self, ctx: CallerContext, call_id: str, name: str, reason: str) -> list[Event]:
        return self.pipeline.interrupted(self.context(ctx), call_id, name, reason)

    def side_effects(self, call: ToolCall) -> SideEffects:
        """What running the recorded ``call`` again would do (``external`` when its tool
        is gone): the resume of a restarted turn asks (actors.agents.resume_calls)."""
        return call_side_effects(self.pipeline.registry, call.name, call.arguments)

    def read_event(
        self, event: Event, position: int | None = None
    ) -> tuple[str, ChatMessage | None, str] | None:
        if isinstance(event, _PIPELINE_EVENTS):  # an ending event also ends the call's span
            self.pipeline.apply(event, position)
        return self.peek_event(event)

    def peek_event(self, event: Event) -> tuple[str, ChatMessage | None, str] | None:
        """:meth:`read_event` without folding ``event`` into the pipeline (approvals, the
        call's span): for an event staged, not appended yet (actors.agents.staged_append)."""
        match event:
            case ToolCallCompleted():
                return (
                    event.call_id,
                    ChatMessage(
                        role="tool",
                        content=event.for_llm,
                        tool_call_id=event.call_id,
                        name=event.tool,
                    ),
                    "",
                )
            case ToolCallFailed():
                return (
                    event.call_id,
                    ChatMessage(
                        role="tool",
                        content=event.message,
                        is_error=True,
                        tool_call_id=event.call_id,
                        name=event.tool,
                    ),
                    "",
                )
            case ToolCallRefused():
                text = event.for_llm or event.reason
                return (
                    event.call_id,
                    ChatMessage(
                        role="tool",
                        content=text,
                        is_error=True,
                        tool_call_id=event.call_id,
                        name=event.tool,
                    ),
                    "",
                )
            case ToolApprovalRequested():
                return event.call_id, None, "requested"
            case ToolApprovalDecided():
                return event.call_id, None, "decided"
        return None

    def scrub(self, text: str) -> str:
        return self.pipeline.scrubber.scrub(text)


def _step(decision: Any) -> CallStep:
    if isinstance(decision, Refused):
        return CallStep(events=list(decision.events), outcome="refused")
    if isinstance(decision, NeedsApproval):
        return CallStep(
            events=list(decision.events),
            outcome="approval",
            ticket=decision.request,
            approval_timeout_s=decision.request.timeout_s,
        )
    assert isinstance(decision, Ready)
    return CallStep(events=list(decision.events), outcome="ready", ticket=decision.plan)
