"""Delegation links between agents, quality gates and the evaluate-optimize loop."""

from clawlog.events.streams import link_stream

from .directory import DelegationDirectory, Target
from .messages import DelegationInfo

__all__ = [
    "DelegationDirectory",
    "DelegationInfo",
    "Target",
    "link_stream",
]
