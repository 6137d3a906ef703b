"""Projections: read models folded from the log by a runner with exactly-once checkpoints."""

from .base import Projection
from .errors import NotCaughtUp, ProjectionError, ProjectionFailed
from .models.session_history import SessionHistory, SessionHistoryReader
from .runner import ProjectionRunner, ProjectionStatus

__all__ = [
    "NotCaughtUp",
    "Projection",
    "ProjectionError",
    "ProjectionFailed",
    "ProjectionRunner",
    "ProjectionStatus",
    "SessionHistory",
    "SessionHistoryReader",
]
