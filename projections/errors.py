"""Errors of the projections package.

ProjectionError
 ├── ProjectionFailed     a projection's handler raised; it is stopped at that position
 ├── RebuildFailed        a rebuild finished, but one or more projections failed in it
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
    "RebuildFailed",
]


class ProjectionError(Exception):
    """Root of every error raised by :mod:`projections`."""


class ProjectionFailed(ProjectionError):
    """``name`` stopped before the event at ``position``, whose handler raised ``error``."""

    def __init__(self, name: str, position: int, error: str) -> None:
        super().__init__(f"projection {name!r} failed at position {position}: {error}")
        self.name, self.position, self.error = name, position, error


class RebuildFailed(ProjectionError):
    """A rebuild swapped its read models in, but each projection in ``failures`` stopped
    at the position it names; the others reached ``position``."""

    def __init__(self, position: int, failures: tuple[ProjectionFailed, ...]) -> None:
        names = "; ".join(str(failure) for failure in failures)
        super().__init__(f"rebuild up to position {position} failed: {names}")
        self.position, self.failures = position, failures


class NotCaughtUp(ProjectionError):
    """The read models did not reach the position in time."""


class ReadModelsUnavailable(ProjectionError):
    """The read-model database cannot be opened or read (or this handle is closed)."""


class InvalidProjection(ProjectionError):
    """A projection definition is unusable (bad name, duplicate name, bad DDL)."""
