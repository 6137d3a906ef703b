"""The delegations read model: every delegation's lifecycle, folded from the link streams,
with the ones past their deadline and still without an outcome marked overdue.

It reads the log directly (``link/`` streams), so it works on any log — also one written
by another process — and a rebuild is simply a re-read.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from clawlog.events import UnknownEvent

from .messages import LinkState
from .state import apply_link_event

__all__ = ["DelegationRow", "delegation_overview"]


class DelegationRow(msgspec.Struct, frozen=True, kw_only=True):
    delegation_id: str
    source: str
    target: str
    mode: str
    status: str
    task: str
    reason: str = ""
    requested_at: float = 0.0
    deadline_at: float = 0.0
    finished_at: float | None = None
    attempts: int = 1
    announced: bool = False
    overdue: bool = False


async def delegation_overview(
    store: Any, *, now: float | None = None, overdue_only: bool = False
) -> list[DelegationRow]:
    """All delegations in the log, oldest first."""
    now = time.time() if now is None else now
    links: dict[str, LinkState] = {}
    position = 1
    while True:
        page = await store.read_all(position, 2000, stream_prefix="link/")
        for recorded in page:
            if not isinstance(recorded.event, UnknownEvent):
                apply_link_event(links.setdefault(recorded.stream, LinkState()), recorded.event)
        if len(page) < 2000:
            break
        position = page[-1].position + 1
    rows = []
    for state in links.values():
        for info in state.delegations.values():
            overdue = info.status == "running" and now > info.deadline_at
            rows.append(
                DelegationRow(
                    delegation_id=info.delegation_id,
                    source=info.source,
                    target=info.target,
                    mode=info.mode,
                    status=info.status,
                    task=info.task,
                    reason=info.reason,
                    requested_at=info.requested_at,
                    deadline_at=info.deadline_at,
                    finished_at=info.finished_at,
                    attempts=info.attempts,
                    announced=info.announced,
                    overdue=overdue,
                )
            )
    rows.sort(key=lambda r: r.requested_at)
    return [r for r in rows if r.overdue] if overdue_only else rows
