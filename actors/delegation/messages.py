"""Messages to DelegationLink actors and their state."""

from __future__ import annotations

import msgspec

from clawlog.events.domain.delegation import DelegationMode, DelegationStatus
from clawlog.events.folds.delegation import DelegationEndReason
from clawlog.events.folds.timers import TimerBook

from ..messages import Message, Request

__all__ = [
    "AnnouncementEnded",
    "CancelDelegation",
    "Delegate",
    "DelegationInfo",
    "DelegationOutcome",
    "GateOutcome",
    "LinkState",
    "ListDelegations",
]


class DelegationInfo(msgspec.Struct, kw_only=True):
    delegation_id: str
    source: str
    target: str
    task: str
    mode: DelegationMode
    user: str = ""
    source_session: str = ""
    source_key: str = ""
    target_session: str = ""
    status: DelegationStatus = "running"
    result: str = ""
    reason: DelegationEndReason = ""
    requested_at: float = 0.0
    deadline_at: float = 0.0
    finished_at: float | None = None
    attempts: int = 1
    #: The delegated turn runs no quality gates. Snapshots keep the old name.
    skip_quality_gates: bool = msgspec.field(default=False, name="skip_hooks")
    announced: bool = False
    #: The tool call in the source session that asked ("" when none did).
    call_id: str = ""
    #: The log position of the recorded outcome (0 while running): what the turn that
    #: announces it in the source session is caused by.
    outcome_position: int = 0


class LinkState(msgspec.Struct, kw_only=True):
    source: str = ""
    target: str = ""
    max_concurrent: int = 5
    user_allow: list[str] = msgspec.field(default_factory=list)
    user_deny: list[str] = msgspec.field(default_factory=list)
    enabled: bool = True
    delegations: dict[str, DelegationInfo] = msgspec.field(default_factory=dict)
    #: Each running delegation's deadline, a durable timer (``actors.timers``).
    timers: TimerBook = msgspec.field(default_factory=TimerBook)

    def running(self) -> list[DelegationInfo]:
        return [d for d in self.delegations.values() if d.status == "running"]


class Delegate(Request[DelegationInfo], frozen=True, kw_only=True):
    task: str
    mode: DelegationMode = "sync"
    user: str = ""
    source_session: str = ""
    source_key: str = ""
    skip_quality_gates: bool = False
    deadline_s: float | None = None
    #: The tool call in the source session that asks (the request's causation).
    call_id: str = ""


class ListDelegations(Request["list[DelegationInfo]"], frozen=True, kw_only=True):
    include_finished: bool = False
    source_session: str | None = None


class CancelDelegation(Request[DelegationInfo], frozen=True, kw_only=True):
    delegation_id: str
    by: str = ""


class DelegationOutcome(Message, frozen=True, kw_only=True):
    """How the target's turn ended (sent by the reply object of that turn)."""

    delegation_id: str
    attempt: int
    ok: bool
    text: str
    crashed: bool = False


class AnnouncementEnded(Message, frozen=True, kw_only=True):
    """The source session's turn on an async delegation's announcement ended (or the
    message never became a turn): the link looks in the log whether it was delivered."""

    delegation_id: str


class GateOutcome(Message, frozen=True, kw_only=True):
    delegation_id: str
    attempt: int
    gate: str
    passed: bool
    feedback: str = ""
