"""Shell commands that are never run (seed 001 §4 deny patterns).

Checked on the command of every command tool (``exec``, ``shell``…) before approval, and
on quality-gate commands: a match refuses the call outright, whatever the security mode
or allowlist says. The table is :data:`clawlog.tools.exec.patterns.DENY`, one
``CommandPattern`` per row with its seed group (``destructive file ops``, ``reverse
shell``…), and a command is matched as the exec tool matches it: after quotes, escapes,
wrappers and nested shells are removed (``sh -c 'rm -rf /'`` is ``rm -rf``).
"""

from __future__ import annotations

from .exec.analysis import match_deny
from .exec.patterns import CommandPattern

__all__ = ["match_deny_pattern"]


def match_deny_pattern(command: str) -> CommandPattern | None:
    """The first deny pattern of :data:`~clawlog.tools.exec.patterns.DENY` that ``command``
    matches in any of its forms, or None. Its ``group`` is the seed's category
    (``destructive file ops``…), its ``label`` the seed's spelling of the pattern."""
    found = match_deny(command)
    return found[0] if found is not None else None
