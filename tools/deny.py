"""Shell commands that are never run (seed 001 §4 deny patterns).

Checked on the command of every command tool (``exec``, ``shell``…) before approval: a
match refuses the call outright, whatever the security mode or allowlist says.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["DENY_PATTERNS", "DenyPattern", "match_deny_pattern"]

_SEGMENT = r"[^;&|\n]*"  # within one simple command
_SH = r"(?:sudo\s+)?(?:ba|z|da|k|a)?sh\b"


class DenyPattern(NamedTuple):
    category: str
    #: The seed's spelling of the pattern, for messages.
    label: str
    regex: re.Pattern[str]


def _d(category: str, label: str, pattern: str, flags: int = 0) -> DenyPattern:
    return DenyPattern(category, label, re.compile(pattern, flags))


DENY_PATTERNS: tuple[DenyPattern, ...] = (
    _d(
        "destructive file ops",
        "rm -rf",
        rf"\brm\b(?={_SEGMENT}(?:\s-[a-zA-Z]*[rR]|\s--recursive\b))"
        rf"(?={_SEGMENT}(?:\s-[a-zA-Z]*f|\s--force\b))",
    ),
    _d("destructive file ops", "del /f", r"\bdel\s+(?:/\w+\s+)*/f\b", re.IGNORECASE),
    _d("destructive file ops", "rmdir /s", r"\brmdir\s+(?:/\w+\s+)*/s\b", re.IGNORECASE),
    _d("disk destruction", "mkfs", r"\bmkfs(?:\.\w+)?\b"),
    _d("disk destruction", "dd if=", rf"\bdd\s+(?:{_SEGMENT}\s)?if="),
    _d(
        "disk destruction",
        "> /dev/sd*",
        r">\s*/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d)",
    ),
    _d("system control", "shutdown", r"\bshutdown\b"),
    _d("system control", "reboot", r"\breboot\b"),
    _d("system control", "poweroff", r"\bpoweroff\b"),
    _d("fork bomb", ":(){ ... };:", r":\s*\(\s*\)\s*\{[^}]*:\s*\|\s*:[^}]*\}\s*;\s*:"),
    _d(
        "fork bomb",
        ":(){ ... };:",
        r"\b(\w+)\s*\(\s*\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}\s*;\s*\1\b",
    ),
    _d("remote code exec", "curl | sh", rf"\bcurl\b{_SEGMENT}\|\s*{_SH}"),
    _d("remote code exec", "wget -O - | sh", rf"\bwget\b{_SEGMENT}\|\s*{_SH}"),
    _d("reverse shell", "/dev/tcp/", r"/dev/(?:tcp|udp)/"),
    _d("reverse shell", "nc -e", rf"\b(?:nc|ncat|netcat)\b{_SEGMENT}\s-[a-zA-Z]*[ec]\b"),
    _d("eval injection", "eval $()", r"\beval\s+[\"']?(?:\$\(|`)"),
    _d(
        "eval injection",
        "base64 -d | sh",
        rf"\bbase64\s+{_SEGMENT}(?:-d\b|--decode\b|-D\b){_SEGMENT}\|\s*{_SH}",
    ),
)


def match_deny_pattern(command: str) -> DenyPattern | None:
    """The first deny pattern ``command`` matches, or None."""
    for pattern in DENY_PATTERNS:
        if pattern.regex.search(command):
            return pattern
    return None
