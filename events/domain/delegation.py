"""Delegation links and delegations (seed 001 §7, §9, §11), on ``link/{src}->{dst}``."""

from __future__ import annotations

from typing import Literal

import msgspec

from ..base import Event

__all__ = [
    "EVENTS",
    "DelegationAnnounced",
    "DelegationCancelled",
    "DelegationCompleted",
    "DelegationEndStatus",
    "DelegationFailed",
    "DelegationFailure",
    "DelegationMode",
    "DelegationRefused",
    "DelegationRequested",
    "DelegationRetried",
    "DelegationStatus",
    "GateEvaluated",
    "LinkConfigured",
]

#: sync: the delegate tool replies with the outcome; async: it replies at once and the
#: outcome is announced to the source session later.
DelegationMode = Literal["sync", "async"]
#: How a delegation ended (its outcome event: completed, failed or cancelled).
DelegationEndStatus = Literal["completed", "failed", "cancelled"]
#: A delegation: running until an outcome event; then how it ended.
DelegationStatus = Literal["running", DelegationEndStatus]
#: Why a delegation failed: the target's turn failed or its actor crashed, it ran past
#: its deadline, a restart interrupted it, or a quality gate rejected its last attempt.
DelegationFailure = Literal["target_failed", "crashed", "timeout", "interrupted", "gate_rejected"]


class LinkConfigured(Event, frozen=True, tag="link.configured"):
    """A directed link source → target, created or changed by configuration (never a model)."""

    source: str
    target: str
    max_concurrent: int = 5
    user_allow: list[str] = msgspec.field(default_factory=list)
    user_deny: list[str] = msgspec.field(default_factory=list)
    enabled: bool = True


class DelegationRequested(Event, frozen=True, tag="delegation.requested"):
    delegation_id: str
    source: str
    target: str
    task: str
    mode: DelegationMode = "sync"
    user: str = ""
    source_session: str = ""
    #: The source session's key (where async outcomes are announced).
    source_key: str = ""
    target_session: str = ""
    deadline_s: float = 300.0
    at: float = 0.0
    #: The delegated turn runs no quality gates (set by a gate's own review turns).
    skip_quality_gates: bool = msgspec.field(default=False, name="skip_hooks")
    #: The tool call in the source session that asked ("" when not asked by a tool call,
    #: and in logs written before lineage). The envelope's causation id names it too.
    call_id: str = ""


class DelegationRefused(Event, frozen=True, tag="delegation.refused"):
    source: str
    target: str
    reason: str
    user: str = ""


class DelegationCompleted(Event, frozen=True, tag="delegation.completed"):
    delegation_id: str
    result: str
    at: float = 0.0


class DelegationFailed(Event, frozen=True, tag="delegation.failed"):
    delegation_id: str
    reason: DelegationFailure
    message: str = ""
    at: float = 0.0


class DelegationCancelled(Event, frozen=True, tag="delegation.cancelled"):
    delegation_id: str
    by: str = ""
    at: float = 0.0


class DelegationAnnounced(Event, frozen=True, tag="delegation.announced"):
    """An async delegation's outcome was delivered to the source session."""

    delegation_id: str
    #: The source session's turn that delivered it (its ``session.turn_started`` has the
    #: sender ``delegate:{delegation_id}``); "" in logs written before lineage.
    turn_id: str = ""


class GateEvaluated(Event, frozen=True, tag="delegation.gate_evaluated"):
    delegation_id: str
    gate: str
    passed: bool
    feedback: str = ""
    attempt: int = 1


class DelegationRetried(Event, frozen=True, tag="delegation.retried"):
    """A quality gate blocked the result: the target runs again with the feedback."""

    delegation_id: str
    attempt: int
    feedback: str = ""


EVENTS = (
    LinkConfigured,
    DelegationRequested,
    DelegationRefused,
    DelegationCompleted,
    DelegationFailed,
    DelegationCancelled,
    DelegationAnnounced,
    GateEvaluated,
    DelegationRetried,
)
