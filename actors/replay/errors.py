"""Errors of the re-run engine.

ReplayError
 ├── NothingRecorded    the log holds no turn (or no config) to re-run for that session
 └── ReplyNotRecorded   the re-run asked for a model reply that was never recorded
                        (also a ``ModelError``, so the Session records it as a model failure)
"""

from __future__ import annotations

from ..models.errors import ModelError

__all__ = ["NothingRecorded", "ReplayError", "ReplyNotRecorded"]


class ReplayError(Exception):
    """Root of every error raised by :mod:`actors.replay`."""


class NothingRecorded(ReplayError):
    """The session, the turn range or the agent's config is not in the log."""


class ReplyNotRecorded(ReplayError, ModelError):
    """The re-run asked the model for a reply the recording does not have (recorded as
    ``session.model_failed`` with kind ``not_recorded``)."""

    kind = "not_recorded"
