"""What the console serves and how: the log, the address, the token, the views file."""

from __future__ import annotations

import ipaddress
import string
from dataclasses import dataclass
from pathlib import Path

from .errors import UnsafeBind

__all__ = ["ConsoleConfig", "is_loopback"]

#: What a token may hold: it travels in a URL and a cookie (``;``, a space or a quote
#: would cut the cookie short, so the browser would lose it after the first page).
_TOKEN_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-._~+/=")


@dataclass(frozen=True, kw_only=True)
class ConsoleConfig:
    """``db``: an SQLite file or a ``postgresql://`` URL (opened read-only).
    ``host``/``port``: where ``clawlog ui`` binds (port 0: any free port).
    ``token``: when set, every request must carry it (``?token=`` once, then a cookie, or
    ``Authorization: Bearer``); required for a non-loopback ``host`` (``clawlog ui``
    generates one when none is given).
    ``views``: the read-models file (default: the one the CLI readers share)."""

    db: str
    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    views: Path | None = None

    def __post_init__(self) -> None:
        if self.token is not None and not self.token.strip():
            raise UnsafeBind("the token is empty: pass a non-empty --token, or none on loopback")
        if self.token is not None and not set(self.token) <= _TOKEN_CHARACTERS:
            odd = sorted(set(self.token) - _TOKEN_CHARACTERS)
            raise UnsafeBind(
                f"the token holds {''.join(odd)!r}, which a browser cookie cannot keep: use "
                "letters, digits and - . _ ~ + / = (e.g. python -c 'import secrets; "
                "print(secrets.token_urlsafe())')"
            )
        if not is_loopback(self.host) and self.token is None:
            raise UnsafeBind(
                f"refusing to serve the log on {self.host!r} without a token: anyone who "
                "can reach it could read every event. Give it a token (secrets."
                "token_urlsafe(); `clawlog ui` generates one), or bind 127.0.0.1"
            )


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve anywhere
