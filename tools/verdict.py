"""The verdict every decided call records (issue 20): the deciding step, its rule, and the
digest of the effective policy that decided, plus the facts the steps read.

A refused call's ``tool.call_refused`` carries its step, rule (for every step: ``unknown
tool`` at resolve, ``schema: type at #/target`` at validation) and ``policy_digest``; an
allowed call's ``tool.call_started`` carries the step that let it run (``policy`` when no
approval was needed, ``approval`` for an allowlist entry, a safe bin, ask=off or a
person's answer, with ``approved_by``), its rule and the digest. Both go in the same
append as the call's other events: a verdict costs no extra commit. The call's
``tool.call_requested`` carries :class:`CallFacts`: what the steps read besides the
configuration and the arguments (the caller's provider and ownership, the tool's group and
flags), so :mod:`.what_if` can decide the call again under another policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clawlog.events.domain.tool import AllowedStep, CallFacts
from clawlog.events.logging import get_logger

from .approvals import ApprovalConfig, ApprovalVerdict
from .base import Tool
from .context import ToolContext
from .policy import PolicyDecision, PolicyEngine, policy_digest
from .scrub import Scrubber

__all__ = [
    "NOT_AN_OBJECT_RULE",
    "UNKNOWN_TOOL_RULE",
    "PolicyDigests",
    "allowed_verdict",
    "call_facts",
    "policy_rule",
]

_log = get_logger(__name__)

#: The rule an allowed call records when no policy step removed or added its tool.
NOTHING_REMOVED = "no policy step removed it"
#: The rules of the refusals before the policy step and at validation: the tool is not in
#: the registry; the arguments are not one JSON object. A schema refusal names the
#: failed keyword and where (``schema: type at #/target``: :class:`ArgumentError`).
UNKNOWN_TOOL_RULE = "unknown tool"
NOT_AN_OBJECT_RULE = "arguments: not a JSON object"


class PolicyDigests:
    """The digest of each agent's effective policy, computed once per configuration (the
    pipeline's ``policy`` and ``approval_config`` may be replaced: a new pair starts over).
    Thread-safe: the state is swapped as one tuple."""

    __slots__ = ("_state",)

    def __init__(self) -> None:
        self._state: tuple[object, object, dict[str, str]] = (None, None, {})

    def of(self, policy: PolicyEngine, approvals: ApprovalConfig, agent: str) -> str:
        config, known_approvals, digests = self._state
        if config is not policy.config or known_approvals is not approvals:
            digests = {}
            self._state = (policy.config, approvals, digests)
        found = digests.get(agent)
        if found is None:
            found = digests[agent] = policy_digest(policy.config, approvals, agent=agent)
        return found


def policy_rule(decision: PolicyDecision) -> str:
    """The policy's rule as a verdict names it: ``{step}: {rule}``, or that no step had a
    say."""
    return f"{decision.decided_by}: {decision.rule}" if decision.decided_by else NOTHING_REMOVED


def allowed_verdict(policy: PolicyDecision, approval: ApprovalVerdict) -> tuple[AllowedStep, str]:
    """The step and rule that let a call run without a person's answer."""
    if approval.rule in ("", "no approval needed"):
        return "policy", policy_rule(policy)
    return "approval", approval.rule


def call_facts(
    ctx: ToolContext,
    tool: Tool,
    valid_args: Mapping[str, Any] | None,
    *,
    arguments_redacted: bool,
    scrubber: Scrubber,
) -> CallFacts:
    """What the deciding steps read of ``ctx`` and ``tool`` for these arguments
    (``valid_args``: the validated arguments, None if they are not valid)."""
    dangerous, rendered_command = False, None
    if valid_args is not None:
        # Also asked of calls the policy refuses (a looser policy would reach the approval
        # step): a tool that fails to answer counts as dangerous (a person would be asked)
        # rather than turn a clean refusal into a crash. An allowed call asks it again.
        try:
            dangerous = bool(tool.requires_approval_for(valid_args))
            render = getattr(tool, "rendered_command", None)
            if callable(render):
                rendered_command = scrubber.scrub(str(render(valid_args)))
        except Exception as exc:
            _log.warning(
                "a tool failed to describe a call's approval needs",
                tool=tool.name,
                agent=ctx.agent,
                session_key=ctx.session_key,
                error=scrubber.scrub(repr(exc))[:300],
            )
            dangerous = True
    return CallFacts(
        provider=ctx.provider,
        is_owner=ctx.is_owner,
        max_depth=ctx.max_depth,
        peer_kind=ctx.peer_kind,
        channel=ctx.channel,
        chat_id=ctx.chat_id,
        request_allow=list(ctx.request_allow) if ctx.request_allow is not None else None,
        group=tool.group,
        owner_only=tool.owner_only,
        requires_approval=tool.requires_approval,
        dangerous=dangerous,
        rendered_command=rendered_command,
        arguments_redacted=arguments_redacted,
        valid=valid_args is not None,
    )
