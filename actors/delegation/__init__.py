"""Delegation links between agents, quality gates and the evaluate-optimize loop."""

from .directory import INLINE_LIMIT, DelegationDirectory, Target
from .gates import evaluate_gate, parse_verdict
from .link import DelegationError, DelegationLink, link_stream
from .messages import CancelDelegation, Delegate, DelegationInfo, ListDelegations

__all__ = [
    "INLINE_LIMIT",
    "CancelDelegation",
    "Delegate",
    "DelegationDirectory",
    "DelegationError",
    "DelegationInfo",
    "DelegationLink",
    "ListDelegations",
    "Target",
    "evaluate_gate",
    "link_stream",
    "parse_verdict",
]
