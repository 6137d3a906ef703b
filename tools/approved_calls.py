"""The approvals a person gave to calls that have not ended, so a re-run asks no one.

A call approved by a person (``tool.approval_decided``: allow-once or allow-always) and
then interrupted by a restart before it ended may be run again with the same call id
(``actors.agents.resume_calls``). The person answered for that call already: asking
again would send a second ``tool.approval_requested`` for one call, which, unanswered,
times out as denied while the first run may have had its effect. The pipeline folds the
answers here and its approval step takes the recorded one for a call it meets again
(the verdict on ``tool.call_started`` says so). An answer is forgotten when its call
ends (completed, failed, refused), so a provider that reuses a call id in a later turn
is asked again.
"""

from __future__ import annotations

import threading

import msgspec

from clawlog.events import Event
from clawlog.events.domain.tool import (
    ApprovalOutcome,
    ToolApprovalDecided,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallRefused,
)

__all__ = ["ApprovedCalls", "EarlierApproval"]


class EarlierApproval(msgspec.Struct, frozen=True, kw_only=True):
    """A person's answer that let a call run."""

    decision: ApprovalOutcome
    by: str = ""


class ApprovedCalls:
    """Approved calls not ended yet, by (session key, call id); a fold of tool events.
    Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._approved: dict[tuple[str, str], EarlierApproval] = {}

    def apply(self, event: Event) -> None:
        match event:
            case ToolApprovalDecided(decision="allow-once" | "allow-always"):
                answer = EarlierApproval(decision=event.decision, by=event.by)
                with self._lock:
                    self._approved[(event.session_key, event.call_id)] = answer
            case ToolCallCompleted() | ToolCallFailed() | ToolCallRefused():
                with self._lock:
                    self._approved.pop((event.session_key, event.call_id), None)
            case _:
                pass

    def get(self, session_key: str, call_id: str) -> EarlierApproval | None:
        """The answer that let this call run, while the call has not ended."""
        with self._lock:
            return self._approved.get((session_key, call_id))
