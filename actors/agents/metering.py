"""What a session's model calls use and cost, and whether the next one fits its budgets.

A :class:`UsageMeter` belongs to one Session. Before each model request it checks the
budgets that apply (actors.agents.budgets) against the request's estimated most; when the
reply comes it gives what ``session.model_replied`` records: the usage as the provider
reported it (or a local estimate, ``estimated=True``, when the provider reported none),
the model the provider named, and the estimated cost from the model catalog.

Sizes are estimated locally with the session's own measure (actors.agents.context_size:
characters, divided by the ratio its provider's earlier replies calibrated), without a
tokenizer download. It is an estimate for budgets and for replies without usage, never a
bill.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Mapping, MutableMapping
from typing import Any, TypeVar

from clawlog.events import RecordedEvent
from clawlog.events.domain.session import BudgetExceeded, BudgetMetric, BudgetScope, Usage

from ..errors import ArgumentTypeError, InvalidArgument
from ..hub_store import HubStore
from ..providers.base import ModelReply, ModelRequest
from ..providers.catalog import ModelCatalog
from .budgets import BudgetLimits, Budgets
from .config import AgentConfig
from .context_size import estimate_tokens, prompt_chars
from .session_state import SessionState
from .usage_ledger import Spent, UsageLedger, utc_day

__all__ = [
    "BUDGETS",
    "MODEL_CATALOG",
    "USAGE_LEDGER",
    "UsageMeter",
    "budget_owner",
    "check_metering",
    "install_metering",
    "prepare_metering",
]

S = TypeVar("S")

#: ``runtime.services`` keys: the System's model catalog (``System.open(model_catalog=)``),
#: its budgets (``System.open(budgets=)``) and its day's ledger.
MODEL_CATALOG = "model_catalog"
BUDGETS = "budgets"
USAGE_LEDGER = "usage_ledger"


def _reply_chars(reply: ModelReply) -> int:
    return len(reply.text) + sum(len(c.name) + len(c.arguments) for c in reply.tool_calls)


class UsageMeter:
    """Budgets before each request, usage and cost after each reply, for one session."""

    def __init__(
        self,
        *,
        agent: str,
        budgets: Budgets | None,
        catalog: ModelCatalog,
        ledger: UsageLedger | None,
    ) -> None:
        self.agent = agent
        self.budgets = budgets
        self.catalog = catalog
        self.ledger = ledger
        #: The input estimate of the request in flight, and the session's characters per
        #: token then (for a reply without usage).
        self._request_tokens = 0
        self._chars_per_token = 0.0

    @classmethod
    def for_session(cls, config: AgentConfig, services: Mapping[str, Any]) -> UsageMeter:
        """The meter of a session of ``config``'s agent, from the System's services: the
        agent's budgets (else the System's), the System's catalog (else the defaults)."""
        catalog = services.get(MODEL_CATALOG)
        return cls(
            agent=config.key,
            budgets=config.budgets or services.get(BUDGETS),
            catalog=catalog if isinstance(catalog, ModelCatalog) else ModelCatalog.default(),
            ledger=services.get(USAGE_LEDGER),
        )

    def check(
        self,
        request: ModelRequest,
        state: SessionState,
        *,
        turn_id: str,
        iteration: int,
        now: float,
        request_chars: int | None = None,
        unrecorded: Spent | None = None,
    ) -> BudgetExceeded | None:
        """The budget ``request`` would pass (the event recording it), or None: send it.
        ``request_chars`` is the request's ``prompt_chars`` when the caller measured it
        already (None: measured here). ``unrecorded``: what the session's replies not
        appended yet spent (held: .staged_append), which the daily ledger has not counted
        (``state``, which the session budget reads, has them folded in already)."""
        self._chars_per_token = state.chars_per_token
        chars = (
            prompt_chars(request.system, request.tools, request.messages)
            if request_chars is None
            else request_chars
        )
        self._request_tokens = estimate_tokens(chars, self._chars_per_token)
        if self.budgets is None:
            return None
        most_tokens = self._request_tokens + request.max_tokens
        spec = self.catalog.lookup(request.model)
        most_cost = (
            None if spec is None else spec.max_cost_usd(self._request_tokens, request.max_tokens)
        )
        for scope, subject, day, limits, spent in self._applying(state, utc_day(now), unrecorded):
            found = _passed(limits, spent, most_tokens, most_cost)
            if found is not None:
                metric, limit, used, estimate = found
                return BudgetExceeded(
                    turn_id=turn_id,
                    iteration=iteration,
                    scope=scope,
                    metric=metric,
                    limit=limit,
                    spent=used,
                    request_estimate=estimate,
                    subject=subject,
                    day=day,
                    message=_message(scope, subject, day, metric, limit, used, estimate),
                )
        return None

    def _applying(
        self, state: SessionState, day: str, unrecorded: Spent | None
    ) -> list[tuple[BudgetScope, str, str, BudgetLimits, Spent]]:
        budgets = self.budgets
        assert budgets is not None
        found: list[tuple[BudgetScope, str, str, BudgetLimits, Spent]] = []
        if budgets.session is not None:
            spent = Spent(state.spent_tokens, state.spent_usd)
            found.append(("session", "", "", budgets.session, spent))
        held = unrecorded or Spent()
        if self.ledger is not None and budgets.agent_daily is not None:
            spent = self.ledger.spent("agent", self.agent, day).plus(held.tokens, held.cost_usd)
            found.append(("agent", self.agent, day, budgets.agent_daily, spent))
        if self.ledger is not None and budgets.user_daily is not None and state.user:
            spent = self.ledger.spent("user", state.user, day).plus(held.tokens, held.cost_usd)
            found.append(("user", state.user, day, budgets.user_daily, spent))
        return found

    def replied(self, request_model: str, reply: ModelReply) -> tuple[Usage, str, float | None]:
        """What the reply's ``session.model_replied`` records: usage, model, cost."""
        usage = reply.usage
        if usage.input_tokens == 0 and usage.output_tokens == 0:
            usage = Usage(
                input_tokens=self._request_tokens,
                output_tokens=estimate_tokens(_reply_chars(reply), self._chars_per_token),
                estimated=True,
            )
        model = reply.model or request_model
        cost = self.catalog.cost_usd(model, usage)
        if cost is None and model != request_model:  # a name the catalog does not know
            cost = self.catalog.cost_usd(request_model, usage)
        return usage, model, cost

    def recorded(self, recorded: RecordedEvent, user: str) -> None:
        """A model call was recorded (a reply, or a compaction's summary): the day's
        ledger counts it (other events count nothing)."""
        if self.ledger is not None:
            self.ledger.add(recorded, self.agent, user)


def _passed(
    limits: BudgetLimits, spent: Spent, most_tokens: int, most_cost: float | None
) -> tuple[BudgetMetric, float, float, float] | None:
    if limits.max_tokens is not None and spent.tokens + most_tokens > limits.max_tokens:
        return "tokens", limits.max_tokens, spent.tokens, most_tokens
    if (
        limits.max_cost_usd is not None
        and most_cost is not None
        and spent.cost_usd + most_cost > limits.max_cost_usd
    ):
        return "cost_usd", limits.max_cost_usd, spent.cost_usd, most_cost
    return None


#: Whose budget it is, in the messages of budget refusals (a turn's, a summary's): one
#: wording, read by the user a turn failed for and by operators reading the log alike.
_WHOSE: dict[BudgetScope, str] = {
    "session": "this conversation's budget",
    "agent": "the daily budget of agent {subject} ({day}, UTC)",
    "user": "the daily budget of user {subject} ({day}, UTC)",
}


def budget_owner(scope: BudgetScope, subject: str, day: str) -> str:
    """Whose budget a refusal names: "this conversation's budget", "the daily budget of
    agent main (2026-01-31, UTC)", "the daily budget of user ann (...)"."""
    return _WHOSE[scope].format(subject=subject, day=day)


def _message(
    scope: BudgetScope,
    subject: str,
    day: str,
    metric: BudgetMetric,
    limit: float,
    spent: float,
    estimate: float,
) -> str:
    whose = budget_owner(scope, subject, day)
    if metric == "tokens":
        amounts = (
            f"{spent:,.0f} of {limit:,.0f} tokens are used and the next model request "
            f"could use up to {estimate:,.0f} more"
        )
    else:
        amounts = (
            f"${spent:,.4f} of ${limit:,.4f} is spent and the next model request could "
            f"cost up to ${estimate:,.4f} more"
        )
    after = "start a new conversation or ask" if scope == "session" else "try again tomorrow or ask"
    return (
        f"Stopped before the next model request: it would pass {whose}; {amounts} "
        f"(estimated). To go on, {after} an administrator to raise the limit."
    )


def check_metering(catalog: object, budgets: object) -> None:
    """``System.open``'s ``model_catalog`` and ``budgets``, checked before anything opens."""
    if catalog is not None and not isinstance(catalog, ModelCatalog):
        raise ArgumentTypeError(
            "model_catalog",
            f"must be a clawlog ModelCatalog or None, not {type(catalog).__name__}"
            " (ModelCatalog.default().with_models(ModelSpec(...)) adds models)",
        )
    if budgets is not None and not isinstance(budgets, Budgets):
        raise ArgumentTypeError(
            "budgets", f"must be a clawlog Budgets or None, not {type(budgets).__name__}"
        )


async def install_metering(
    starting: Coroutine[Any, Any, S], catalog: ModelCatalog | None, budgets: Budgets | None
) -> S:
    """The System ``starting`` opens, with its catalog, budgets and ledger as services
    (before any agent registers: sessions read them when they start)."""
    system = await starting
    services: MutableMapping[str, Any] = system.runtime.services  # type: ignore[attr-defined]
    services[MODEL_CATALOG] = catalog or ModelCatalog.default()
    services[BUDGETS] = budgets
    services[USAGE_LEDGER] = UsageLedger()
    return system


async def prepare_metering(
    config: AgentConfig,
    model: str,
    services: Mapping[str, Any],
    store: HubStore,
    *,
    summarizer: str | None = None,
) -> None:
    """Before ``config``'s agent registers with ``model`` (and ``summarizer``, the model
    writing its summaries, if it has its own): a cost budget needs their prices (else
    their calls would go uncounted); a daily budget needs the day's ledger read from the
    log (once per System)."""
    budgets = config.budgets or services.get(BUDGETS)
    if budgets is None:
        return
    catalog = services.get(MODEL_CATALOG) or ModelCatalog.default()
    for role, name in (("model", model), ("summarizer", summarizer)):
        if name is None or not budgets.limits_cost:
            continue
        spec = catalog.lookup(name)
        if spec is None or not spec.priced:
            raise InvalidArgument(
                "budgets",
                f"agent {config.key!r} has a cost budget but the model catalog has no price "
                f"for its {role} {name!r}: add it (System.open(model_catalog="
                "ModelCatalog.default().with_models(ModelSpec(...)))) or budget tokens "
                "(max_tokens) instead",
            )
    ledger = services.get(USAGE_LEDGER)
    if budgets.daily and isinstance(ledger, UsageLedger):
        await ledger.load(store, time.time())
