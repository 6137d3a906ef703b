"""Budgets: how many tokens, or how many (estimated) dollars, a session, an agent or a user
may spend on model calls.

Before each model request the session estimates the request's most (its input estimate
plus its ``max_tokens`` of output; the cost from the model catalog's prices) and checks it
against every budget that applies: the request that would pass one is not sent, a
``session.budget_exceeded`` event records which, and the turn fails with reason
``budget_exceeded`` and a message the user is shown. A budget is checked at every
request, so it can end a turn after a tool call, before the next request.

Periods: a session's budget covers the session's whole life (what its stream records);
an agent's and a user's budget cover one UTC day, across all of that agent's (that
user's) sessions. A user's budget applies where the session knows its user.

Configured System-wide (``System.open(budgets=Budgets(...))``) and per agent
(``AgentConfig.budgets``, which replaces the System's for that agent).
"""

from __future__ import annotations

import math

import msgspec

from ..errors import ArgumentTypeError, InvalidArgument

__all__ = ["BudgetLimits", "Budgets"]


class BudgetLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Limits on the sum of model calls: tokens (input + output, as the providers report
    them), estimated cost in US dollars, or both. None: no limit on that measure."""

    max_tokens: int | None = None
    max_cost_usd: float | None = None

    def __post_init__(self) -> None:
        # msgspec does not check the types of a Struct built in code: an int written as
        # "100" or a float would otherwise fail later, inside a session, or compare oddly.
        if self.max_tokens is not None and (
            isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int)
        ):
            raise ArgumentTypeError(
                "BudgetLimits.max_tokens",
                f"must be a whole number of tokens (int) or None, got {self.max_tokens!r}",
            )
        if self.max_tokens is not None and self.max_tokens < 1:
            raise InvalidArgument(
                "BudgetLimits.max_tokens",
                f"must be a positive number of tokens or None, got {self.max_tokens!r}",
            )
        if self.max_cost_usd is not None and (
            isinstance(self.max_cost_usd, bool) or not isinstance(self.max_cost_usd, int | float)
        ):
            raise ArgumentTypeError(
                "BudgetLimits.max_cost_usd",
                f"must be an amount of US dollars (a float) or None, got {self.max_cost_usd!r}",
            )
        if self.max_cost_usd is not None and (
            not math.isfinite(self.max_cost_usd) or self.max_cost_usd <= 0
        ):
            raise InvalidArgument(
                "BudgetLimits.max_cost_usd",
                f"must be a positive amount of US dollars or None, got {self.max_cost_usd!r}",
            )
        if self.max_tokens is None and self.max_cost_usd is None:
            raise InvalidArgument(
                "BudgetLimits",
                "limits nothing: give max_tokens, max_cost_usd or both (or leave it out)",
            )


class Budgets(msgspec.Struct, frozen=True, kw_only=True):
    """The budgets that apply to an agent's sessions (None: no budget there)."""

    #: One session over its whole life.
    session: BudgetLimits | None = None
    #: The agent per UTC day, across its sessions.
    agent_daily: BudgetLimits | None = None
    #: Each user per UTC day, across the sessions (of every agent with this budget) that
    #: know the user.
    user_daily: BudgetLimits | None = None

    def __post_init__(self) -> None:
        for name in ("session", "agent_daily", "user_daily"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, BudgetLimits):
                raise ArgumentTypeError(
                    f"Budgets.{name}",
                    f"must be a BudgetLimits or None, not {type(value).__name__}"
                    " (write BudgetLimits(max_tokens=..., max_cost_usd=...))",
                )

    @property
    def limits_cost(self) -> bool:
        """True when a budget limits the cost (the model then needs a price)."""
        return any(
            limits is not None and limits.max_cost_usd is not None
            for limits in (self.session, self.agent_daily, self.user_daily)
        )

    @property
    def daily(self) -> bool:
        """True when an agent or user budget applies (they need the day's ledger)."""
        return self.agent_daily is not None or self.user_daily is not None
