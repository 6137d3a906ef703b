"""``clawlog usage``: model tokens and estimated cost, totals per agent, session, model or
day, from the ``usage`` read model (caught up with the log first, see ``views.py``).

Totals are read a page of groups at a time, in key order, and printed as they come
(``listing.py``). On a terminal a last ``total`` row sums the groups shown; the plain
and JSON forms hold only the groups (sum them yourself: no row is counted twice).
Costs are estimates from the model catalog's prices when the calls were recorded. The
calls are the agents' model replies and the summaries compactions wrote (``summaries``
counts those: their tokens and cost are in the other columns too).
"""

from __future__ import annotations

from typing import Any

from clawlog.events import EventStore
from clawlog.projections import ModelUsageReader
from clawlog.projections.read_models.usage import UsageBy, UsageTotal
from clawlog.projections.timeline import Skipped

from .listing import Format, Listing
from .points import EVERY_ROW, Window
from .render import report_skipped
from .views import read_models

__all__ = ["usage"]

#: Groups read per query.
_PAGE = 1000
_COLUMNS = [
    "calls",
    "input",
    "cached",
    "cache write",
    "output",
    "reasoning",
    "est.",
    "cost $",
    "unpriced",
    "summaries",
]
_KEYS = [
    "calls",
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
    "estimated_calls",
    "cost_usd",
    "unpriced_calls",
    "summary_calls",
]


async def usage(
    store: EventStore,
    *,
    by: UsageBy,
    agent: str | None,
    session: str | None,
    form: Format,
    window: Window = EVERY_ROW,
) -> None:
    """One row per group: its calls, tokens and estimated cost."""
    skipped = Skipped() if window.skip_corrupt else None
    async with read_models(store, "usage", skip=skipped) as views:
        reader = ModelUsageReader(views)
        with Listing(
            _title(by, agent, session),
            [by, *_COLUMNS],
            form,
            json_keys=[by, *_KEYS],
            empty="no model replies recorded" + (" for these filters" if agent or session else ""),
        ) as listing:
            sums: list[float] = [0] * len(_KEYS)
            after, left = "", window.limit or None
            while True:
                size = _PAGE if left is None else min(_PAGE, left)
                page = await reader.totals(
                    by,
                    agent=agent,
                    session=session,
                    since=window.since_time,
                    from_position=window.after + 1,
                    after=after,
                    limit=size,
                )
                for total in page:
                    figures = _figures(total)
                    sums = [a + b for a, b in zip(sums, figures, strict=True)]
                    listing.add(_cells(total.key, figures), {by: total.key, **_item(figures)})
                if left is not None:
                    left -= len(page)
                if len(page) < size or (left is not None and left <= 0):
                    break
                after = page[-1].key
            if form == "table" and listing.rows > 1:
                listing.add(_cells("total", sums))
    if skipped:
        report_skipped(skipped.positions, skipped.damaged)


def _figures(total: UsageTotal) -> list[float]:
    """The total's numbers in ``_KEYS`` order."""
    return [getattr(total, key) for key in _KEYS]


def _cells(key: str, figures: list[float]) -> list[Any]:
    """A row as shown: counts as integers, the cost with six decimals (a cheap call costs
    a fraction of a cent)."""
    cost = _KEYS.index("cost_usd")
    return [key, *(f"{v:.6f}" if i == cost else int(v) for i, v in enumerate(figures))]


def _item(figures: list[float]) -> dict[str, Any]:
    return dict(zip(_KEYS, figures, strict=True))


def _title(by: str, agent: str | None, session: str | None) -> str:
    filters = [
        f"{name} {value}" for name, value in (("agent", agent), ("session", session)) if value
    ]
    return f"model usage by {by}" + (f" ({', '.join(filters)})" if filters else "")
