"""Errors of the projections package.

ProjectionError
 ├── ProjectionFailed     a projection's handler raised; it is stopped at that position
 └── NotCaughtUp          wait_until() timed out before the read models reached a position
"""

from __future__ import annotations

__all__ = ["NotCaughtUp", "ProjectionError", "ProjectionFailed"]


class ProjectionError(Exception):
    """Root of every error raised by :mod:`projections`."""


class ProjectionFailed(ProjectionError):
    def __init__(self, name: str, position: int, error: str) -> None:
        super().__init__(f"projection {name!r} failed at position {position}: {error}")
        self.name, self.position, self.error = name, position, error


class NotCaughtUp(ProjectionError):
    """The read models did not reach the position in time."""
