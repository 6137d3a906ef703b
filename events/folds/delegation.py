"""A delegation's lifecycle from its events: the rules that the link actor deciding
(``actors/delegation/state.py``), its replay and the delegations projection
(``projections/read_models/delegations.py``) share.

- :func:`deadline_of`: when a requested delegation is due;
- :func:`delegation_end`: the status, reason and time an outcome event records;
- :func:`is_overdue`: still running after its deadline (the projection's SQL says the same).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..base import Event
from ..domain.delegation import (
    DelegationCancelled,
    DelegationCompleted,
    DelegationEndStatus,
    DelegationFailed,
    DelegationFailure,
    DelegationRequested,
    DelegationStatus,
)

__all__ = ["DelegationEnd", "DelegationEndReason", "deadline_of", "delegation_end", "is_overdue"]

#: Why a delegation ended: its failure, ``cancelled``, or ``""`` when it completed.
DelegationEndReason = Literal[DelegationFailure, "cancelled", ""]


class DelegationEnd(msgspec.Struct, frozen=True):
    """How a delegation ended, as its outcome event records it."""

    delegation_id: str
    status: DelegationEndStatus
    reason: DelegationEndReason
    finished_at: float
    #: the result delivered, or the failure's message; None: a cancellation carries none
    result: str | None


def deadline_of(requested: DelegationRequested) -> float:
    return requested.at + requested.deadline_s


def delegation_end(event: Event) -> DelegationEnd | None:
    """The end an outcome event records; None for any other event."""
    match event:
        case DelegationCompleted():
            return DelegationEnd(event.delegation_id, "completed", "", event.at, event.result)
        case DelegationFailed():
            return DelegationEnd(
                event.delegation_id, "failed", event.reason, event.at, event.message
            )
        case DelegationCancelled():
            return DelegationEnd(event.delegation_id, "cancelled", "cancelled", event.at, None)
    return None


def is_overdue(status: DelegationStatus, deadline_at: float | None, now: float) -> bool:
    """Still running after its deadline, as of ``now``."""
    return status == "running" and deadline_at is not None and deadline_at < now
