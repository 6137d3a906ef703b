"""Shell commands that are never run (seed 001 §4 deny patterns).

Checked on the command of every command tool (``exec``, ``shell``…) before approval, and
on quality-gate commands: a match refuses the call outright, whatever the security mode
or allowlist says. The table is :data:`tools.exec.patterns.DENY` seen by its seed groups
(``destructive file ops``, ``reverse shell``…), and a command is matched as the exec tool
matches it: after quotes, escapes, wrappers and nested shells are removed
(``sh -c 'rm -rf /'`` is ``rm -rf``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .exec.analysis import match_deny
from .exec.patterns import DENY

__all__ = ["DENY_PATTERNS", "DenyPattern", "match_deny_pattern"]


class DenyPattern(NamedTuple):
    #: The seed's group (``destructive file ops``…).
    category: str
    #: The seed's spelling of the pattern, for messages.
    label: str
    regex: re.Pattern[str]


DENY_PATTERNS: tuple[DenyPattern, ...] = tuple(
    DenyPattern(pattern.group, pattern.label, pattern.regex) for pattern in DENY
)
_SEEN_AS = dict(zip(DENY, DENY_PATTERNS, strict=True))


def match_deny_pattern(command: str) -> DenyPattern | None:
    """The first deny pattern ``command`` matches in any of its views, or None."""
    found = match_deny(command)
    return _SEEN_AS[found[0]] if found is not None else None
