"""Budgets for a compaction's summary: the summarizer's call is checked like a model
request, before it is sent.

The summary's request (the transcript it would summarize, plus its ``max_tokens``; its
cost at the summarizer's price) is checked against the session's budgets
(:meth:`~clawlog.actors.agents.metering.UsageMeter.check`). A summary that would pass one
is not written: the compaction is recorded as its pruning (if it pruned anything) and a
``session.compaction_failed`` of kind ``budget_exceeded`` whose message names the budget.

What follows is what follows any failed summary. In a turn, the turn goes on with the
pruned conversation and no other summary is tried in it; the agent's next model request is
checked against the budgets on its own, so a turn whose budget is spent still ends with
``budget_exceeded`` before that request (and if the request fits, e.g. a summarizer priced
above the agent's model, it is sent uncompacted). ``System.compact`` raises
:class:`~clawlog.actors.errors.CompactionFailedError` with ``kind == "budget_exceeded"``.

A re-run's recorded summaries are not checked: they are served as recorded (a refusal
recorded as a failure is served again as that failure).
"""

from __future__ import annotations

from clawlog.events import Event
from clawlog.events.domain.session import BudgetExceeded, CompactionFailed
from clawlog.events.logging import get_logger

from ..errors import CompactionFailedError
from .compaction import Compaction, turn_keys
from .metering import UsageMeter, budget_owner
from .session_state import SessionState
from .summarizer import ModelSummary
from .usage_ledger import Spent

__all__ = ["BUDGET_EXCEEDED", "refused_for_budget", "summary_over_budget"]

#: The ``session.compaction_failed`` kind of a summary a budget refused.
BUDGET_EXCEEDED = "budget_exceeded"

_log = get_logger(__name__)


def summary_over_budget(
    meter: UsageMeter,
    compaction: Compaction,
    state: SessionState,
    now: float,
    unrecorded: Spent | None = None,
) -> list[Event] | None:
    """The events recording ``compaction`` when its summary would pass a budget (its
    pruning, if any, then the refusal), or None: write the summary. ``unrecorded``: what
    the session's replies not appended yet spent (:meth:`UsageMeter.check`)."""
    job = compaction.summary
    if meter.budgets is None or not isinstance(job, ModelSummary):
        return None  # no budget; nothing to write; or a re-run's summary (served as recorded)
    event = compaction.event
    request = job.request()
    exceeded = meter.check(
        request,
        state,
        turn_id=event.turn_id,
        iteration=event.iteration,
        now=now,
        unrecorded=unrecorded,
    )
    if exceeded is None:
        return None
    failed = CompactionFailed(
        kind=BUDGET_EXCEEDED,
        message=_message(exceeded, request.model),
        turn_id=event.turn_id,
        iteration=event.iteration,
        trigger=event.trigger,
        model=request.model,
        pruned=len(event.pruned),
    )
    _log.warning(
        "summary refused: it would pass a budget",
        trigger=event.trigger,
        **turn_keys(event.turn_id),
        scope=exceeded.scope,
        metric=exceeded.metric,
        limit=exceeded.limit,
        spent=exceeded.spent,
        request_estimate=exceeded.request_estimate,
        model=request.model,
        pruned=len(event.pruned),
    )
    return [event, failed] if event.pruned else [failed]


def refused_for_budget(path: str, events: list[Event]) -> CompactionFailedError:
    """``System.compact``'s error for a summary a budget refused (``events`` as
    :func:`summary_over_budget` returned them)."""
    failed = events[-1]
    assert isinstance(failed, CompactionFailed)
    pruned = f"{failed.pruned} old tool results were pruned; " if failed.pruned else ""
    return CompactionFailedError(
        f"the summary of {path} was not written: {failed.message}; {pruned}nothing was "
        "summarized. Raise the budget, give the agent a cheaper summarizer "
        "(System.register_agent(..., summarizer=...)) or clear the session (System.clear)",
        kind=BUDGET_EXCEEDED,
    )


def _message(exceeded: BudgetExceeded, model: str) -> str:
    whose = budget_owner(exceeded.scope, exceeded.subject, exceeded.day)
    if exceeded.metric == "tokens":
        amounts = (
            f"{exceeded.spent:,.0f} of {exceeded.limit:,.0f} tokens are used and the "
            f"summary could use up to {exceeded.request_estimate:,.0f} more"
        )
    else:
        amounts = (
            f"${exceeded.spent:,.4f} of ${exceeded.limit:,.4f} is spent and the summary "
            f"could cost up to ${exceeded.request_estimate:,.4f} more"
        )
    return f"the summarizer's request ({model}) would pass {whose}: {amounts} (estimated)"
