"""The tool pipeline: one path for every call (seed 001 §1, seed 002 §2, seed 004 §3).

resolve → policy → validation → rate limit → loop detection → approval run in
:meth:`ToolPipeline.begin`, synchronously and thread-safely, so the owning actor runs them
in its own thread; :meth:`ToolPipeline.execute` (execute with timeout → scrub → truncate)
is the only async part. The pipeline never touches the event store: it returns events,
the caller appends them (one writer per stream) and folds them back with :meth:`apply`.

``tool.call_started`` is part of :class:`Ready`'s events (from ``begin`` or
``decide_approval``): append it before submitting ``execute(plan)``.

Every decided call records its verdict (:mod:`.verdict`): the deciding step, its rule and
the digest of the effective policy, on the ``tool.call_refused`` or ``tool.call_started``
that goes in the same append as the call's other events, and the facts the steps read on
its ``tool.call_requested``. The arguments are validated before the policy step runs (it
still refuses first), so that the facts say whether they were valid.

A call a person approved that is met again before it ended (run again with the same call
id after a restart: ``actors.agents.resume_calls``) is not asked about again: the approval
step takes the recorded answer (:mod:`.approved_calls`), and the verdict on its
``tool.call_started`` says "allow-once by ops, before a restart".

Each call is an ``execute_tool {tool}`` span (:mod:`.call_telemetry`): it starts in
``begin`` under the current context, is current while ``execute`` runs the tool, and ends
when the call's ending event comes back through :meth:`ToolPipeline.apply`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, get_args

import msgspec

from clawlog.events import Event
from clawlog.events.domain.tool import (
    AllowedStep,
    AllowlistMatch,
    ApprovalOutcome,
    ToolAllowlistChanged,
    ToolApprovalDecided,
    ToolApprovalRequested,
    ToolCallRequested,
    ToolLoopWarning,
)

from .approvals import (
    DECISIONS,
    ApprovalConfig,
    ApprovalState,
    PendingApproval,
    evaluate_approval,
)
from .approved_calls import ApprovedCalls
from .base import Tool
from .call_telemetry import CallTelemetry
from .context import ToolContext
from .decisions import ApprovalRequest, Decision, NeedsApproval, Outcome, Ready, Refused, ToolPlan
from .errors import ApprovalError, ArgumentError
from .execution import (
    interrupted_event,
    parse_arguments,
    plain,
    run_plan,
    started_event,
)
from .finish import DEFAULT_MAX_RESULT_CHARS, ResultFinisher
from .loops import LoopDetector
from .policy import PolicyDecision, PolicyEngine, PolicyExplanation
from .ratelimit import RateLimiter
from .refusal import Refuser
from .registry import ToolDefinition, ToolRegistry
from .result import ErrorKind
from .scrub import Scrubber
from .verdict import (
    NOT_AN_OBJECT_RULE,
    UNKNOWN_TOOL_RULE,
    PolicyDigests,
    allowed_verdict,
    call_facts,
)

__all__ = ["ToolPipeline"]


class ToolPipeline:
    """Decides, runs and records tool calls for the sessions of one agent (or many).

    Every collaborator is optional; the defaults follow the seeds (no rate limit unless
    configured, loop thresholds 10/20/30, approvals security=full ask=on-miss 120 s).
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        policy: PolicyEngine | None = None,
        scrubber: Scrubber | None = None,
        rate_limiter: RateLimiter | None = None,
        loop_detector: LoopDetector | None = None,
        approvals: ApprovalState | None = None,
        approval_config: ApprovalConfig | None = None,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.registry = registry
        self.policy = policy or PolicyEngine()
        self.scrubber = scrubber or Scrubber()
        self.rate_limiter = rate_limiter or RateLimiter()
        self.loop_detector = loop_detector or LoopDetector()
        self.approvals = approvals or ApprovalState()
        #: A person's answers to calls not ended: a re-run after a restart asks no one.
        self.approved = ApprovedCalls()
        self.approval_config = approval_config or ApprovalConfig()
        self.finisher = ResultFinisher(self.scrubber, max_chars=max_result_chars)
        self.telemetry = CallTelemetry()
        self.digests = PolicyDigests()
        self._clock = clock

    # -- what a caller may use ----------------------------------------------------------
    def available(self, ctx: ToolContext) -> list[Tool]:
        return self.policy.filter(self.registry.tools(), ctx)

    def definitions(self, ctx: ToolContext, provider: str | None = None) -> list[ToolDefinition]:
        """The tools ``ctx`` may use, normalized for ``provider`` (default ``ctx.provider``)."""
        chosen = provider if provider is not None else ctx.provider
        return self.registry.definitions(chosen, self.available(ctx))

    def explain(self, name: str, ctx: ToolContext) -> PolicyExplanation:
        return self.policy.explain(self.registry.get(name) or name, ctx)

    # -- the deciding steps (synchronous, thread-safe) ----------------------------------
    def begin(
        self, ctx: ToolContext, call_id: str, name: str, args: Mapping[str, Any] | str | None
    ) -> Decision:
        """Run the deciding steps for a call the model made. Append the returned events,
        then :meth:`apply` them (the call's span ends when its ending event is applied)."""
        self.telemetry.started(ctx.session_key, call_id, name, ctx.correlation_id)
        try:
            return self._decide(ctx, call_id, name, args)
        except BaseException as exc:  # no decision, no event: the span ends here
            self.telemetry.discard(ctx.session_key, call_id, exc)
            raise

    def _decide(
        self, ctx: ToolContext, call_id: str, name: str, args: Mapping[str, Any] | str | None
    ) -> Decision:
        parsed, problem = parse_arguments(args)
        # As sent, taken before validation: a validator fills in defaults in place.
        sent = plain(parsed) if parsed is not None else None
        tool = self.registry.get(name)
        valid: dict[str, Any] | None = None
        schema_rule = ""
        if tool is not None and parsed is not None:
            try:
                valid = self.registry.validator(name)(parsed)
            except ArgumentError as exc:
                problem = self.scrubber.scrub(str(exc))
                schema_rule = self.scrubber.scrub(exc.rule) if exc.rule else "schema"
        requested = self._requested(ctx, call_id, name, args, sent, tool, valid)
        refuse = Refuser(ctx, call_id, name, requested, self.policy_digest(ctx.agent))
        if tool is None:
            return refuse(
                "resolve",
                ErrorKind.NOT_AUTHORIZED,
                "unknown tool",
                self._unknown_tool(name, ctx),
                rule=UNKNOWN_TOOL_RULE,
            )
        policy = self.policy.decide(name, ctx, group=tool.group, owner_only=tool.owner_only)
        if not policy.allowed:
            return refuse(
                "policy",
                ErrorKind.NOT_AUTHORIZED,
                f"removed by the policy step {policy.decided_by}",
                f"The tool {name!r} is not available to you here ({policy.decided_by}: "
                f"{policy.rule}). Use one of the tools you were given instead.",
                rule=f"{policy.decided_by}: {policy.rule}",
            )
        if parsed is None:
            return refuse(
                "validation",
                ErrorKind.INVALID_PARAMETERS,
                problem,
                f"Invalid arguments for {name}: {problem}. Send the arguments as one JSON "
                "object matching the tool's parameters.",
                rule=NOT_AN_OBJECT_RULE,
            )
        if valid is None:
            return refuse(
                "validation",
                ErrorKind.INVALID_PARAMETERS,
                problem,
                f"Invalid arguments for {name}: {problem}. Fix the arguments and call again.",
                rule=schema_rule,
            )
        limit = self.rate_limiter.check(ctx.session_id, ctx.user, name)
        if not limit.allowed:
            wait = max(1, int(limit.retry_after + 0.999))
            return refuse(
                "rate_limit",
                ErrorKind.RATE_LIMITED,
                f"rate limit of {limit.describe(name, ctx.user)}",
                f"Rate limit reached for {name}: {limit.describe(name, ctx.user)}. Try again "
                f"in {wait} s, or continue without this tool meanwhile.",
                retry_after=limit.retry_after,
                rule=f"{limit.scope} {limit.window}",
            )
        return self._after_rate_limit(ctx, call_id, tool, valid, requested, refuse, policy)

    def _requested(
        self,
        ctx: ToolContext,
        call_id: str,
        name: str,
        args: Mapping[str, Any] | str | None,
        sent: dict[str, Any] | None,
        tool: Tool | None,
        valid: dict[str, Any] | None,
    ) -> ToolCallRequested:
        """The call's first event: the arguments as sent (scrubbed; ``sent`` is None when
        they did not parse) and, for a known tool, the facts the deciding steps read."""
        scrubbed = self.scrubber.scrub_value(sent) if sent is not None else {}
        sent = sent if sent is not None else {}
        facts = None
        if tool is not None:
            redacted = scrubbed != sent
            facts = call_facts(
                ctx, tool, valid, arguments_redacted=redacted, scrubber=self.scrubber
            )
        return ToolCallRequested(
            call_id=call_id,
            tool=name,
            agent=ctx.agent,
            session_key=ctx.session_key,
            arguments=scrubbed,
            raw_arguments=self.scrubber.scrub(args)[:2000] if isinstance(args, str) else "",
            user=ctx.user,
            depth=ctx.depth,
            facts=facts,
        )

    def policy_digest(self, agent: str) -> str:
        """The digest of the policy and approvals config deciding ``agent``'s calls
        (:func:`tools.policy_digest`), as its calls' verdicts record it."""
        return self.digests.of(self.policy, self.approval_config, agent)

    def _after_rate_limit(
        self,
        ctx: ToolContext,
        call_id: str,
        tool: Tool,
        args: dict[str, Any],
        requested: ToolCallRequested,
        refuse: Refuser,
        policy: PolicyDecision,
    ) -> Decision:
        loop = self.loop_detector.check(ctx.session_id, call_id, tool.name, args)
        if loop.level in ("critical", "circuit_breaker"):
            return refuse(
                "loop_detection",
                ErrorKind.LOOP_DETECTED,
                f"{loop.pattern} repeated {loop.count} times ({loop.level})",
                loop.message,
                rule=f"{loop.pattern} x{loop.count} ({loop.level})",
            )
        events: list[Event] = [requested]
        if loop.level == "warning" and loop.pattern:
            events.append(
                ToolLoopWarning(
                    call_id=call_id,
                    tool=tool.name,
                    pattern=loop.pattern,
                    count=loop.count,
                    message=loop.message,
                    agent=ctx.agent,
                    session_key=ctx.session_key,
                )
            )
        plan = ToolPlan(call_id=call_id, ctx=ctx, tool=tool, args=args, warning=loop.message)
        verdict = evaluate_approval(tool, args, ctx.agent, self.approval_config, self.approvals)
        if verdict.action == "refuse":
            refused = refuse(
                "approval",
                ErrorKind.NOT_AUTHORIZED,
                verdict.rule,
                f"{tool.name} was not run: {verdict.reason}",
                rule=verdict.rule,
            )
            return Refused(
                events=[*events, *refused.events[1:]], result=refused.result, step="approval"
            )
        earlier = self.approved.get(ctx.session_key, call_id)
        if earlier is not None:  # run again after a restart: the person answered already
            by = earlier.by or "the approver"
            rule = f"{earlier.decision} by {by}, before a restart"
            started = self._started(plan, "approval", rule, earlier.by)
            return Ready(events=[*events, started], plan=plan)
        if verdict.action == "ask":
            return self._ask(plan, events, verdict.reason, verdict.pattern, verdict.allow_always)
        step, rule = allowed_verdict(policy, verdict)
        started = self._started(plan, step, rule)
        return Ready(events=[*events, started], plan=plan)

    def _started(self, plan: ToolPlan, step: AllowedStep, rule: str, by: str = "") -> Event:
        """``tool.call_started`` with the verdict that let the call run."""
        return msgspec.structs.replace(
            started_event(plan),
            step=step,
            rule=rule,
            approved_by=by,
            policy_digest=self.policy_digest(plan.ctx.agent),
        )

    def _ask(
        self, plan: ToolPlan, events: list[Event], reason: str, pattern: str, allow_always: bool
    ) -> NeedsApproval:
        timeout = self.approval_config.timeout_s
        scrubbed = self.scrubber.scrub_value(plain(plan.args))
        request = ApprovalRequest(
            plan=plan,
            reason=reason,
            pattern=self.scrubber.scrub(pattern),
            allow_always=allow_always,
            timeout_s=timeout,
            expires_at=self._clock() + timeout,
        )
        ctx = plan.ctx
        events.append(
            ToolApprovalRequested(
                call_id=plan.call_id,
                tool=plan.name,
                reason=reason,
                summary=_summary(plan.name, scrubbed),
                agent=ctx.agent,
                session_key=ctx.session_key,
                arguments=scrubbed,
                arguments_redacted=scrubbed != plan.args,
                pattern=request.pattern,
                allow_always=allow_always,
                timeout_s=timeout,
                expires_at=request.expires_at,
                user=ctx.user,
            )
        )
        self.telemetry.waiting(ctx.session_key, plan.call_id)
        return NeedsApproval(events=events, request=request)

    def decide_approval(
        self, request: ApprovalRequest, decision: ApprovalOutcome, by: str = ""
    ) -> Refused | Ready:
        """Apply a person's answer (or ``"timeout"``) to a pending request."""
        if decision not in DECISIONS:
            raise ApprovalError(f"unknown approval decision {decision!r}; one of {DECISIONS}")
        plan, ctx = request.plan, request.plan.ctx
        asked_at = request.expires_at - request.timeout_s
        wait_ms = max(0.0, (self._clock() - asked_at) * 1000)
        self.telemetry.decided(ctx.session_key, plan.call_id, decision, wait_ms)
        decided = ToolApprovalDecided(
            call_id=plan.call_id,
            tool=plan.name,
            decision=decision,
            by=by,
            agent=ctx.agent,
            session_key=ctx.session_key,
        )
        refuse = Refuser(ctx, plan.call_id, plan.name, decided, self.policy_digest(ctx.agent))
        if decision == "deny":
            return refuse(
                "approval",
                ErrorKind.NOT_AUTHORIZED,
                f"denied by {by or 'the approver'}",
                f"The user denied this {plan.name} call; it was not run. Do not "
                "retry it; ask the user how to proceed.",
                rule=f"denied by {by}",
            )
        if decision == "timeout":
            return refuse(
                "approval",
                ErrorKind.NOT_AUTHORIZED,
                "the approval timed out",
                f"No one approved this {plan.name} call within "
                f"{request.timeout_s:g} s, so it was not run. Continue without it "
                "or ask the user to approve it.",
                rule="approval timeout",
            )
        if request.arguments_lost:
            return refuse(
                "approval",
                ErrorKind.INVALID_PARAMETERS,
                "approved after a restart, arguments not stored",
                "The approval arrived after a restart, and this call's arguments "
                "held secrets that are never stored. Call the tool again.",
                rule="arguments lost in restart",
            )
        events: list[Event] = [decided]
        if decision == "allow-always" and request.allow_always:
            events.append(
                ToolAllowlistChanged(
                    agent=ctx.agent,
                    tool=plan.name,
                    pattern=request.pattern,
                    added=True,
                    match="exact",
                    by=by,
                    call_id=plan.call_id,
                )
            )
        events.append(self._started(plan, "approval", f"{decision} by {by or 'the approver'}", by))
        return Ready(events=events, plan=plan)

    def restore_approval(
        self, ctx: ToolContext, pending: PendingApproval
    ) -> ApprovalRequest | Refused:
        """Rebuild a request from the log after a restart (see ``ApprovalState.pending``)."""
        self.telemetry.started(ctx.session_key, pending.call_id, pending.tool, ctx.correlation_id)
        tool = self.registry.get(pending.tool)
        if tool is None:
            decided = ToolApprovalDecided(
                call_id=pending.call_id,
                tool=pending.tool,
                decision="deny",
                by="clawlog",
                agent=ctx.agent,
                session_key=ctx.session_key,
            )
            digest = self.policy_digest(ctx.agent)
            return Refuser(ctx, pending.call_id, pending.tool, decided, digest)(
                "approval",
                ErrorKind.NOT_AUTHORIZED,
                "the tool is no longer registered",
                f"The tool {pending.tool!r} is gone since this call asked for approval.",
            )
        plan = ToolPlan(call_id=pending.call_id, ctx=ctx, tool=tool, args=dict(pending.arguments))
        self.telemetry.waiting(ctx.session_key, pending.call_id)
        return ApprovalRequest(
            plan=plan,
            reason=pending.reason,
            pattern=pending.pattern,
            allow_always=pending.allow_always,
            timeout_s=pending.timeout_s,
            expires_at=pending.expires_at,
            arguments_lost=pending.arguments_redacted,
        )

    def _unknown_tool(self, name: str, ctx: ToolContext) -> str:
        names = [t.name for t in self.available(ctx)]
        offer = ", ".join(names[:40]) + (" …" if len(names) > 40 else "") or "none"
        return f"There is no tool named {name!r}. Your tools are: {offer}."

    # -- execution (on the I/O loop) ----------------------------------------------------
    async def execute(self, plan: ToolPlan) -> Outcome:
        """Run the call with its timeout, then scrub and truncate. Never raises for a tool
        failure (it becomes ``tool.call_failed``); cancellation propagates.

        The call's span (from ``begin``) is current meanwhile: what the tool traces nests
        under it."""
        with self.telemetry.running(plan.ctx.session_key, plan.call_id) as span:
            outcome = await run_plan(plan, self.finisher, span)
        self.loop_detector.record_result(plan.ctx.session_id, plan.call_id, outcome.result.for_llm)
        return outcome

    # -- the owner's side ---------------------------------------------------------------
    def interrupted(self, ctx: ToolContext, call_id: str, name: str, reason: str) -> list[Event]:
        """Events closing a call that will never finish (cancelled turn, crash, restart)."""
        self.telemetry.closing(ctx.session_key, call_id, name, ctx.correlation_id)
        return [interrupted_event(ctx, call_id, name, self.scrubber.scrub(reason))]

    def allowlist_change(
        self,
        agent: str,
        tool: str,
        pattern: str,
        *,
        added: bool = True,
        match: AllowlistMatch = "glob",
        by: str = "",
    ) -> list[Event]:
        """Events for an operator's allowlist edit (``match="glob"``: fnmatch patterns such
        as ``git status*``); append them, then :meth:`apply`."""
        if match not in get_args(AllowlistMatch):  # callers without type checking
            raise ApprovalError(f"match must be 'exact' or 'glob', not {match!r}")
        return [
            ToolAllowlistChanged(
                agent=agent,
                tool=tool,
                pattern=self.scrubber.scrub(pattern),
                added=added,
                match=match,
                by=by,
            )
        ]

    def apply(self, event: Event, position: int | None = None) -> None:
        """Fold an appended (or replayed) event into the approval state; an event ending a
        call in flight ends its span, with the event's log ``position`` when known."""
        self.approvals.apply(event)
        self.approved.apply(event)
        self.telemetry.ended(event, position)

    def reset_loops(self, ctx: ToolContext) -> None:
        """Forget the session's loop history (call when a new user turn starts)."""
        self.loop_detector.reset(ctx.session_id)


def _summary(tool: str, scrubbed_args: dict[str, Any]) -> str:
    text = msgspec.json.encode(scrubbed_args).decode()
    return f"{tool} {text}"[:500]
