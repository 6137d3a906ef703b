"""Errors of the projections package.

ProjectionError
 ├── ProjectionFailed     a projection's handler raised; it is stopped at that position
 ├── NotCaughtUp          wait_until() timed out before the read models reached a position
 ├── ReadModelsUnavailable  the read-model file is missing, foreign, or the reader is closed
 └── InvalidProjection    a projection's name, DDL or types cannot be used
"""

from __future__ import annotations

__all__ = [
    "InvalidProjection",
    "NotCaughtUp",
    "ProjectionError",
    "ProjectionFailed",
    "ReadModelsUnavailable",
]


class ProjectionError(Exception):
    """Root of every error raised by :mod:`projections`."""


class ProjectionFailed(ProjectionError):
    """``name`` stopped before the event at ``position``, whose handler raised ``error``."""

    def __init__(self, name: str, position: int, error: str) -> None:
        super().__init__(f"projection {name!r} failed at position {position}: {error}")
        self.name, self.position, self.error = name, position, error


class NotCaughtUp(ProjectionError):
    """The read models did not reach the position in time."""


class ReadModelsUnavailable(ProjectionError):
    """The read-model database cannot be opened or read (or this handle is closed)."""


class InvalidProjection(ProjectionError):
    """A projection definition is unusable (bad name, duplicate name, bad DDL)."""
