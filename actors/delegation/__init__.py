"""Delegation links between agents, quality gates and the evaluate-optimize loop."""

from .directory import DelegationDirectory, Target
from .messages import DelegationInfo

__all__ = [
    "DelegationDirectory",
    "DelegationInfo",
    "Target",
]
