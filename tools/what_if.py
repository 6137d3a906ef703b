"""Policy what-if over the whole log: every recorded call decided again under another
policy, and the calls whose outcome would change, both ways (issue 20).

    report = await what_if(store, load_policy_file("stricter.toml"))
    report.totals.newly_refused, [c.call_id for c in report.changes]

or streamed, in bounded memory (what ``clawlog audit --what-if`` does)::

    run = PolicyWhatIf(policy, agent="lead")
    async for change in run.changes(store):
        ...
    run.totals

This module only reads: it applies the tools' own deciding code (:class:`PolicyEngine`,
:func:`evaluate_approval`) to what the log recorded of each call: its scrubbed arguments
and the facts its ``tool.call_requested`` carries (``CallFacts``: the caller's provider
and ownership, the tool's group and flags). Why here: the re-decision is the tools
package's policy code, and ``tools`` may read the log (``events``) but nothing above it.

Which steps are decided again, in the pipeline's order:

- ``resolve``: never (a policy cannot make an unknown tool exist): unchanged.
- ``policy`` (profiles, allow and deny lists, subagent and leaf deny, owner-only, users'
  allowed tools, per-request allow lists): always, from the facts.
- ``validation``: the recorded result stands (the arguments do not change).
- ``rate_limit`` and ``loop_detection``: not re-decidable. Their verdicts are live
  counters over the calls before, which another policy changes; a call they refused is
  reported as such unless the new policy already refuses it. A call they let through
  is assumed to pass again.
- ``approval`` (deny patterns and exec's command analysis, security and ask modes,
  never-auto-approve arguments, the allowlist as the log built it, safe bins): always,
  unless it needs a command whose arguments were redacted in the log (not re-decidable).
  Where the new policy asks a person: a call that was asked keeps the recorded answer; a
  call that was not is reported as ``asks`` (no answer exists to replay).

Calls recorded before verdicts (no ``facts``) and calls never decided (still waiting for
a person, or the process stopped first) are counted as not re-decidable. A call run again
after a restart (``tool.call_resume_decided``) is examined once.

**Which calls.** ``agent``, ``tool``, and a span of the log: requested at or after
``since_time`` (or from position ``start``), and before ``until_time`` or position
``until`` (both exclusive). A call is placed by its request; its outcome is read past the
span's end, and the reading stops once every call requested in the span is decided and
the log is past the end (by :data:`CLOCK_SLACK_S` for a time).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any, Literal

import msgspec

from clawlog.events import EventStore, LogPages, RecordedEvent
from clawlog.events.domain.tool import (
    CallFacts,
    ToolAllowlistChanged,
    ToolApprovalDecided,
    ToolCallRefused,
    ToolCallRequested,
    ToolCallResumeDecided,
    ToolCallStarted,
    ToolDomain,
)

from .approvals import (
    ApprovalConfig,
    ApprovalState,
    ApprovalVerdict,
    command_of,
    evaluate_approval,
)
from .context import ToolContext
from .policy import PolicyDecision, PolicyEngine, policy_digest
from .policy_config import PolicyConfig
from .policy_file import PolicyFile
from .result import ToolResult
from .verdict import allowed_verdict

__all__ = [
    "CLOCK_SLACK_S",
    "WHAT_IF_TYPES",
    "CallChange",
    "ChangeKind",
    "PolicyWhatIf",
    "WhatIfOutcome",
    "WhatIfReport",
    "WhatIfTotals",
    "what_if",
]

#: What a call's re-decision ends in: it runs, it is refused, or it waits for a person
#: whose answer the log does not have.
WhatIfOutcome = Literal["allowed", "refused", "asks"]
#: How a call's outcome changes under the new policy.
ChangeKind = Literal["newly_refused", "newly_allowed", "newly_asks"]
#: The event types a what-if reads (the others are not needed to decide a call).
WHAT_IF_TYPES = (
    "tool.call_requested",
    "tool.call_refused",
    "tool.call_started",
    "tool.approval_decided",
    "tool.allowlist_changed",
    "tool.call_resume_decided",
)
_CHANGES: dict[tuple[str, str], ChangeKind] = {
    ("allowed", "refused"): "newly_refused",
    ("refused", "allowed"): "newly_allowed",
    ("allowed", "asks"): "newly_asks",
    ("refused", "asks"): "newly_asks",
}
#: How far out of time order the log may be (several PostgreSQL writers stamp their
#: batches with their own clocks): a read for calls before ``until_time`` goes on until
#: requests this much later.
CLOCK_SLACK_S = 10.0
#: Events read per page (two pages in memory: one decided, the next being read).
_PAGE = 2_000
#: Policy decisions remembered per distinct caller and tool (then forgotten, and
#: remembered again: memory stays bounded however varied the log).
_MEMO_LIMIT = 50_000


class CallChange(msgspec.Struct, frozen=True, kw_only=True):
    """A recorded call whose outcome the new policy changes."""

    #: Position of the call's ``tool.call_requested``.
    position: int
    stream: str
    #: The turn (correlation id) the call belongs to.
    turn_id: str
    call_id: str
    tool: str
    agent: str
    session_key: str
    requested_at: float
    change: ChangeKind
    #: The recorded outcome, its deciding step and rule.
    was: Literal["allowed", "refused"]
    was_step: str
    was_rule: str
    #: The outcome under the new policy, its deciding step and rule.
    now: WhatIfOutcome
    now_step: str
    now_rule: str


class WhatIfTotals(msgspec.Struct, kw_only=True):
    """What a what-if found; ``examined`` is the sum of the other counts."""

    examined: int = 0
    unchanged: int = 0
    newly_refused: int = 0
    newly_allowed: int = 0
    newly_asks: int = 0
    not_redecidable: int = 0
    #: Why calls could not be decided again, with how many each.
    not_redecidable_why: dict[str, int] = msgspec.field(default_factory=dict)


class WhatIfReport(msgspec.Struct, frozen=True, kw_only=True):
    """Every change, and the totals (:func:`what_if`)."""

    changes: list[CallChange]
    totals: WhatIfTotals
    #: Positions of corrupt events stepped over (``skip_corrupt`` only).
    skipped: list[int] = msgspec.field(default_factory=list)


class _Verdict(msgspec.Struct, frozen=True):
    """A re-decision. ``unknown``: the call cannot be decided again, ``rule`` says why."""

    outcome: WhatIfOutcome | Literal["unknown"]
    step: str
    rule: str


def _unknown(why: str) -> _Verdict:
    return _Verdict("unknown", "", why)


class _Call:
    """A requested call waiting for the event that decides it."""

    __slots__ = ("answered", "own_allowlist_change", "recorded", "requested")

    def __init__(self, recorded: RecordedEvent, requested: ToolCallRequested) -> None:
        self.recorded, self.requested = recorded, requested
        self.answered = False
        #: The allow-always answer's allowlist entry: it counts from the next call on.
        self.own_allowlist_change: ToolAllowlistChanged | None = None


class _RecordedTool:
    """A recorded call's tool as the approval step sees it: its name and the facts the
    log kept (never executed)."""

    description = "a recorded tool (what-if stand-in; never executed)"
    parameters: Mapping[str, Any] = {"type": "object"}
    timeout = 0.0
    domain: ToolDomain = "orchestrator"
    requires_sanitization = False

    def __init__(self, name: str, facts: CallFacts) -> None:
        self.name = name
        self.group = facts.group
        self.owner_only = facts.owner_only
        self.requires_approval = facts.requires_approval
        self._dangerous = facts.dangerous
        command = facts.rendered_command
        self.rendered_command = (lambda _args: command) if command is not None else None

    def requires_approval_for(self, args: Mapping[str, Any]) -> bool:
        return self._dangerous

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        raise RuntimeError("a what-if never runs a tool")


class PolicyWhatIf:
    """Decides recorded calls again under ``policy`` and reports the changes.

    Feed it the log in order (:meth:`changes` does, from a store); ``agent``, ``tool``,
    ``since_time`` (epoch seconds, at or after), ``until_time`` (epoch seconds, before)
    and ``until`` (a position, before) choose the calls examined, by their request; the
    totals are final once the feed ends (:meth:`finish`).
    """

    def __init__(
        self,
        policy: PolicyFile | PolicyConfig,
        approvals: ApprovalConfig | None = None,
        *,
        agent: str | None = None,
        tool: str | None = None,
        since_time: float | None = None,
        until_time: float | None = None,
        until: int | None = None,
    ) -> None:
        if isinstance(policy, PolicyFile):
            config, approvals = policy.policy, approvals or policy.approvals
        else:
            config = policy
        self.config = config
        self.approvals = approvals or ApprovalConfig()
        self.engine = PolicyEngine(config)
        self.agent, self.tool, self.since_time = agent, tool, since_time
        self.until_time, self.until = until_time, until
        #: A request past the span's end has been seen (with the slack for a time): no
        #: call requested later is examined.
        self.past_end = False
        self.totals = WhatIfTotals()
        self.allowlist = ApprovalState()
        self._calls: dict[tuple[str, str, str], _Call] = {}
        self._resumed: set[tuple[str, str, str]] = set()
        self._digests: dict[str, str] = {}
        self._memo: dict[tuple[Any, ...], PolicyDecision] = {}
        self._approvals_memo: dict[tuple[Any, ...], ApprovalVerdict] = {}
        self._allowlist_generation = 0
        #: The walk of the latest :meth:`changes` (its ``skipped`` and ``damaged``).
        self.pages: LogPages | None = None

    # -- reading a store ----------------------------------------------------------------
    async def changes(
        self, store: EventStore, *, start: int = 1, skip_corrupt: bool = False
    ) -> AsyncIterator[CallChange]:
        """Every change, in the order the calls were decided, from position ``start`` on
        (the allowlist before it is read too). One page of the log in memory at a time,
        plus the calls requested and not yet decided."""
        if start > 1:
            before = LogPages(
                store,
                1,
                stop=start - 1,
                types=["tool.allowlist_changed"],
                skip_corrupt=skip_corrupt,
            )
            async for page in before:
                for recorded in page:
                    if isinstance(recorded.event, ToolAllowlistChanged):
                        self._allowlist_changed(recorded.event)
        pages = LogPages(
            store, start, types=WHAT_IF_TYPES, page_size=_PAGE, skip_corrupt=skip_corrupt
        )
        self.pages = pages
        async with contextlib.aclosing(_read_ahead(pages)) as read:
            async for page in read:
                for recorded in page:
                    change = self.feed(recorded)
                    if change is not None:
                        yield change
                if self.past_end and not self._calls:
                    break  # every call of the span is decided: the rest is after it
        self.finish()

    # -- the fold -----------------------------------------------------------------------
    def feed(self, recorded: RecordedEvent) -> CallChange | None:
        """Take the next event of the log; the change it completes, if any."""
        event = recorded.event
        key = (recorded.stream, recorded.correlation_id or "", getattr(event, "call_id", ""))
        match event:
            case ToolCallRequested():
                self._requested(key, recorded, event)
            case ToolCallRefused() | ToolCallStarted():
                call = self._calls.pop(key, None)
                if call is not None:
                    change = self._judge(call, event)
                    if call.own_allowlist_change is not None:
                        self._allowlist_changed(call.own_allowlist_change)
                    return change
            case ToolApprovalDecided():
                call = self._calls.get(key)
                if call is not None:
                    call.answered = True
            case ToolAllowlistChanged():
                call = self._calls.get(key) if event.call_id else None
                if call is not None:  # decided before its own answer changed the allowlist
                    call.own_allowlist_change = event
                else:
                    self._allowlist_changed(event)
            case ToolCallResumeDecided() if event.decision == "rerun":
                self._resumed.add(key)
            case _:
                pass
        return None

    def _allowlist_changed(self, event: ToolAllowlistChanged) -> None:
        self.allowlist.apply(event)
        self._allowlist_generation += 1  # the remembered approval verdicts are stale

    def finish(self) -> WhatIfTotals:
        """Count the calls never decided; the totals, now final."""
        for _ in range(len(self._calls)):
            self._count_not_redecidable("never decided (awaiting approval or interrupted)")
        self._calls.clear()
        return self.totals

    def _requested(
        self, key: tuple[str, str, str], recorded: RecordedEvent, event: ToolCallRequested
    ) -> None:
        if key in self._resumed:  # the same call run again after a restart: examined once
            self._resumed.discard(key)
            return
        if not self._in_span(recorded):
            return
        if (self.agent is not None and event.agent != self.agent) or (
            self.tool is not None and event.tool != self.tool
        ):
            return
        self._calls[key] = _Call(recorded, event)

    def _in_span(self, recorded: RecordedEvent) -> bool:
        """Whether a call requested here is in the span examined; notes the span's end."""
        at = recorded.recorded_at
        if self.until is not None and recorded.position >= self.until:
            self.past_end = True
            return False
        if self.until_time is not None and at >= self.until_time:
            self.past_end = self.past_end or at >= self.until_time + CLOCK_SLACK_S
            return False
        return self.since_time is None or at >= self.since_time

    # -- deciding again -----------------------------------------------------------------
    def _judge(self, call: _Call, ending: ToolCallRefused | ToolCallStarted) -> CallChange | None:
        was: Literal["allowed", "refused"] = (
            "refused" if isinstance(ending, ToolCallRefused) else "allowed"
        )
        now = self._decide(call, ending)
        if now is None:
            self.totals.examined += 1
            self.totals.unchanged += 1
            return None
        outcome = now.outcome
        if outcome == "unknown":
            self._count_not_redecidable(now.rule)
            return None
        self.totals.examined += 1
        kind = _CHANGES.get((was, outcome))
        if kind is None:
            self.totals.unchanged += 1
            return None
        setattr(self.totals, kind, getattr(self.totals, kind) + 1)
        requested, recorded = call.requested, call.recorded
        return CallChange(
            position=recorded.position,
            stream=recorded.stream,
            turn_id=recorded.correlation_id or "",
            call_id=requested.call_id,
            tool=requested.tool,
            agent=requested.agent,
            session_key=requested.session_key,
            requested_at=recorded.recorded_at,
            change=kind,
            was=was,
            was_step=ending.step,
            was_rule=ending.rule,
            now=outcome,
            now_step=now.step,
            now_rule=now.rule,
        )

    def _count_not_redecidable(self, why: str) -> None:
        totals = self.totals
        totals.examined += 1
        totals.not_redecidable += 1
        totals.not_redecidable_why[why] = totals.not_redecidable_why.get(why, 0) + 1

    def _decide(self, call: _Call, ending: ToolCallRefused | ToolCallStarted) -> _Verdict | None:
        """The call's outcome under the new policy; None: the recorded one stands."""
        requested, refused = call.requested, isinstance(ending, ToolCallRefused)
        if refused and ending.step == "resolve":
            return None
        facts = requested.facts
        if facts is None:
            return _unknown("recorded before verdicts (no call facts in the log)")
        if ending.policy_digest and ending.policy_digest == self._digest(requested.agent):
            return None  # decided under this very policy
        policy = self._policy(requested, facts)
        if not policy.allowed:
            return _Verdict("refused", "policy", f"{policy.decided_by}: {policy.rule}")
        if not facts.valid or (refused and ending.step == "validation"):
            return None  # refused at validation, as recorded
        if refused and ending.step in ("rate_limit", "loop_detection"):
            return _unknown(f"refused by {ending.step} (live counters, not policy)")
        return self._approval(call, facts, policy)

    def _approval(self, call: _Call, facts: CallFacts, policy: PolicyDecision) -> _Verdict | None:
        verdict = self._approval_verdict(call.requested, facts)
        if isinstance(verdict, str):
            return _unknown(verdict)
        if verdict.action == "refuse":
            return _Verdict("refused", "approval", verdict.rule)
        if verdict.action == "run":
            step, rule = allowed_verdict(policy, verdict)
            return _Verdict("allowed", step, rule)
        if call.answered:
            return None  # asked then too: the person's recorded answer stands
        return _Verdict("asks", "approval", verdict.rule)

    def _approval_verdict(
        self, requested: ToolCallRequested, facts: CallFacts
    ) -> ApprovalVerdict | str:
        """:func:`evaluate_approval` on the recorded call, remembered by everything it
        reads: the tool's name and flags, the command, the modes the arguments ask for,
        the agent and the allowlist (by its generation: any change starts afresh). A str:
        why it cannot be decided again."""
        tool = _RecordedTool(requested.tool, facts)
        args = requested.arguments
        command = command_of(tool, args, self.approvals)
        if command is not None and facts.arguments_redacted:
            return "its command's arguments are redacted in the log"
        modes = None
        if command is not None:  # the approval step reads the modes of command tools only
            modes = (_text(args.get("security")), _text(args.get("ask")))
        key = (
            requested.agent,
            requested.tool,
            facts.requires_approval,
            facts.dangerous,
            command,
            modes,
            self._allowlist_generation,
        )
        found = self._approvals_memo.get(key)
        if found is None:
            if len(self._approvals_memo) >= _MEMO_LIMIT:
                self._approvals_memo.clear()
            found = evaluate_approval(tool, args, requested.agent, self.approvals, self.allowlist)
            self._approvals_memo[key] = found
        return found

    def _policy(self, requested: ToolCallRequested, facts: CallFacts) -> PolicyDecision:
        """The policy's verdict, remembered by everything it reads of the call."""
        allow = facts.request_allow
        key = (
            requested.tool,
            requested.agent,
            requested.user,
            requested.depth,
            facts.group,
            facts.owner_only,
            facts.provider,
            facts.is_owner,
            facts.max_depth,
            facts.peer_kind,
            facts.channel,
            facts.chat_id,
            tuple(allow) if allow is not None else None,
        )
        found = self._memo.get(key)
        if found is None:
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            ctx = _context(requested, facts)
            found = self._memo[key] = self.engine.decide(
                requested.tool, ctx, group=facts.group, owner_only=facts.owner_only
            )
        return found

    def _digest(self, agent: str) -> str:
        found = self._digests.get(agent)
        if found is None:
            found = self._digests[agent] = policy_digest(self.config, self.approvals, agent=agent)
        return found


async def _read_ahead(pages: LogPages) -> AsyncGenerator[list[RecordedEvent], None]:
    """The pages, the next one read (by the store's thread) while the caller decides the
    calls of the current one. An error reading a page is raised when the caller reaches
    it, after every page before it."""
    walk = aiter(pages)
    ahead: asyncio.Future[list[RecordedEvent]] = asyncio.ensure_future(anext(walk))
    try:
        while True:
            try:
                page = await ahead
            except StopAsyncIteration:
                return
            ahead = asyncio.ensure_future(anext(walk))
            yield page
    finally:
        # The page read ahead is not wanted now (the walk ended or was left early): its
        # outcome, whatever it is, is collected so that nothing reports it as lost.
        if not ahead.done():
            ahead.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await ahead


def _text(value: Any) -> str | None:
    """A mode argument as the approval step reads it: only strings count."""
    return value if isinstance(value, str) else None


def _context(requested: ToolCallRequested, facts: CallFacts) -> ToolContext:
    return ToolContext(
        agent=requested.agent,
        session_key=requested.session_key,
        user=requested.user,
        depth=requested.depth,
        provider=facts.provider,
        is_owner=facts.is_owner,
        max_depth=facts.max_depth,
        peer_kind=facts.peer_kind,
        channel=facts.channel,
        chat_id=facts.chat_id,
        request_allow=tuple(facts.request_allow) if facts.request_allow is not None else None,
    )


async def what_if(
    store: EventStore,
    policy: PolicyFile | PolicyConfig,
    approvals: ApprovalConfig | None = None,
    *,
    agent: str | None = None,
    tool: str | None = None,
    start: int = 1,
    since_time: float | None = None,
    until: int | None = None,
    until_time: float | None = None,
    skip_corrupt: bool = False,
) -> WhatIfReport:
    """Every recorded call (all sessions; or ``agent``'s, ``tool``'s, requested from
    position ``start`` or time ``since_time`` on, before position ``until`` or time
    ``until_time``) decided again under ``policy``: the changes, both ways, and the
    totals. Holds the changes in memory; :class:`PolicyWhatIf` streams."""
    run = PolicyWhatIf(
        policy,
        approvals,
        agent=agent,
        tool=tool,
        since_time=since_time,
        until_time=until_time,
        until=until,
    )
    changes = [c async for c in run.changes(store, start=start, skip_corrupt=skip_corrupt)]
    skipped = list(run.pages.skipped) if run.pages is not None else []
    return WhatIfReport(changes=changes, totals=run.totals, skipped=skipped)
