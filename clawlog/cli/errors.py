"""Errors of the ``clawlog`` command.

CliError    a problem with the command line or the log, reported in one line on stderr
            with exit status 2 (a missing or foreign file, an unreachable server, a
            missing extra, an unknown team, agent or session)
"""

from __future__ import annotations

__all__ = ["CliError"]


class CliError(Exception):
    """A problem to report in one line, with exit status 2."""
