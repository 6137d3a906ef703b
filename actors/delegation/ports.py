"""What the delegation tools (delegate, delegate_search, evaluate_loop) call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from clawlog.events.domain.delegation import DelegationMode
from clawlog.events.streams import agent_stream, link_stream
from clawlog.events.telemetry import context_carrier

from ..agents.gateway import CallerContext
from ..errors import Rejected
from .directory import DelegationDirectory, Target
from .gates import parse_verdict
from .messages import CancelDelegation, Delegate, DelegationInfo, ListDelegations

if TYPE_CHECKING:
    from ..runtime import ActorHandle, Runtime

__all__ = ["DelegationPorts", "EvaluationResult", "EvaluationRound"]

MAX_ROUNDS_CAP = 5


class EvaluationRound(msgspec.Struct, frozen=True, kw_only=True):
    round: int
    draft: str
    verdict: str
    approved: bool


class EvaluationResult(msgspec.Struct, frozen=True, kw_only=True):
    approved: bool
    final: str
    rounds: list[EvaluationRound]


class DelegationPorts:
    def __init__(self, runtime: Runtime, directory: DelegationDirectory) -> None:
        self._runtime = runtime
        self._directory = directory

    async def delegate(
        self,
        ctx: CallerContext,
        target: str,
        task: str,
        *,
        mode: DelegationMode = "sync",
        deadline_s: float | None = None,
        skip_quality_gates: bool | None = None,
    ) -> DelegationInfo:
        """Delegate ``task`` over the link ctx.agent → target. Errors say what to do."""
        if mode not in ("sync", "async"):
            raise Rejected("mode must be sync or async")
        if not task.strip():
            raise Rejected("a delegation needs a task")
        link = self._link(ctx.agent, target)
        request = Delegate(
            task=task,
            mode=mode,
            user=ctx.user,
            source_session=ctx.session_stream,
            source_key=ctx.session_key,
            deadline_s=deadline_s,
            skip_quality_gates=(
                ctx.skip_quality_gates if skip_quality_gates is None else skip_quality_gates
            ),
            correlation_id=ctx.correlation_id or None,
            trace_context=context_carrier(),  # the delegation's span: the tool call's child
            call_id=ctx.call_id,
        )
        wait = (deadline_s or 300.0) + 30.0 if mode == "sync" else None
        return await link.ask(request, wait)  # type: ignore[no-any-return]

    async def cancel(self, ctx: CallerContext, delegation_id: str) -> DelegationInfo:
        for link in self._links_from(ctx.agent):
            found = await link.ask(ListDelegations(include_finished=True))
            if any(d.delegation_id == delegation_id for d in found):
                return await link.ask(
                    CancelDelegation(
                        delegation_id=delegation_id,  # type: ignore[no-any-return]
                        by=ctx.agent,
                    )
                )
        raise Rejected(f"unknown delegation {delegation_id!r}")

    async def list_delegations(
        self, ctx: CallerContext, *, include_finished: bool = False
    ) -> list[DelegationInfo]:
        found: list[DelegationInfo] = []
        for link in self._links_from(ctx.agent):
            found += await link.ask(
                ListDelegations(
                    include_finished=include_finished, source_session=ctx.session_stream
                )
            )
        return sorted(found, key=lambda d: d.requested_at)

    def search(self, ctx: CallerContext, query: str, limit: int = 10) -> list[Target]:
        return self._directory.search(ctx.agent, query, limit)

    async def evaluate_loop(
        self,
        ctx: CallerContext,
        generator: str,
        evaluator: str,
        task: str,
        criteria: str,
        max_rounds: int = 3,
    ) -> EvaluationResult:
        """Seed 001 §9: generator drafts, evaluator judges, up to ``max_rounds`` (cap 5)."""
        rounds = max(1, min(max_rounds, MAX_ROUNDS_CAP))
        history: list[EvaluationRound] = []
        prompt = task
        draft = ""
        for number in range(1, rounds + 1):
            draft = (await self.delegate(ctx, generator, prompt, skip_quality_gates=True)).result
            verdict = (
                await self.delegate(
                    ctx,
                    evaluator,
                    f"Evaluate against these criteria: {criteria}\nAnswer "
                    f"'APPROVED' or 'REJECTED: <feedback>'.\n\nTask: {task}\n\nDraft:\n{draft}",
                    skip_quality_gates=True,
                )
            ).result
            approved, feedback = parse_verdict(verdict)
            history.append(
                EvaluationRound(round=number, draft=draft, verdict=verdict, approved=approved)
            )
            if approved:
                return EvaluationResult(approved=True, final=draft, rounds=history)
            prompt = f"Revise your draft. Feedback: {feedback}\n\nTask: {task}\n\nDraft:\n{draft}"
        return EvaluationResult(approved=False, final=draft, rounds=history)

    def _link(self, source: str, target: str) -> ActorHandle[Any]:
        if source == target:
            raise Rejected("an agent cannot delegate to itself; do the task yourself")
        if self._runtime.lookup(agent_stream(target)) is None:
            raise Rejected(f"unknown agent {target!r}; {self._options(source)}")
        link = self._runtime.lookup(link_stream(source, target))
        if link is None or not link.is_alive():
            raise Rejected(f"no delegation link from {source} to {target}; {self._options(source)}")
        return link

    def _links_from(self, source: str) -> list[ActorHandle[Any]]:
        links = [
            self._runtime.lookup(link_stream(source, t.key))
            for t in self._directory.targets(source)
        ]
        return [link for link in links if link is not None and link.is_alive()]

    def _options(self, source: str) -> str:
        keys = [t.key for t in self._directory.targets(source)]
        return f"you can delegate to: {', '.join(keys)}" if keys else "you have no delegation links"
