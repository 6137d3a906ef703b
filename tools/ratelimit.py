"""Rate limits for tool calls: per session (seed 001 §15) and per (user, tool) (seed 004
§4.13), as exact sliding windows. A refusal says which window and when to retry.

Nothing is limited unless configured. Seed 001 (which supersedes 000) rate-limits a
session's calls only "when configured"; seed 004's 60 a minute and 1000 an hour per
(user, tool) are the defaults of a product serving many users through built-in tools,
not of an embeddable backend whose caller decides what its tools may cost: as a default
they throttled real work (issue 24: a benchmark turn of three quick calls hit 60 a
minute in seconds) and refused calls no policy had asked to refuse. They remain one
line away: ``RateLimitConfig(user_tool=SUGGESTED_USER_TOOL_WINDOWS)`` (an agent's
``AgentConfig.rate_limits``, or a ``ToolPipeline``'s ``rate_limiter``).

State is in memory (as in both seeds): a restart starts every window afresh.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import msgspec

__all__ = [
    "DEFAULT_USER_TOOL_WINDOWS",
    "SUGGESTED_USER_TOOL_WINDOWS",
    "RateLimitConfig",
    "RateLimitScope",
    "RateLimitVerdict",
    "RateLimiter",
    "Window",
]


#: Which windows a call is counted in: its session's, or its user's for that tool.
RateLimitScope = Literal["session", "user_tool"]


class Window(msgspec.Struct, frozen=True):
    """At most ``limit`` calls in any ``seconds``-long span."""

    limit: int
    seconds: float

    def __post_init__(self) -> None:
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 0:
            raise ValueError(
                f"Window.limit must be a whole number of calls, 0 or more, not {self.limit!r} "
                "(0 refuses every call)"
            )
        if isinstance(self.seconds, bool) or not isinstance(self.seconds, int | float):
            raise TypeError(f"Window.seconds must be a number of seconds, not {self.seconds!r}")
        if not self.seconds > 0 or self.seconds == float("inf"):
            raise ValueError(
                f"Window.seconds must be a finite number of seconds above 0, not "
                f"{self.seconds!r} (a minute is 60.0)"
            )

    def describe(self) -> str:
        span = {60.0: "minute", 3600.0: "hour", 86400.0: "day"}.get(self.seconds)
        return f"{self.limit} per {span}" if span else f"{self.limit} per {self.seconds:g} s"


#: Seed 004 §4.13's limits, 60 per minute and 1000 per hour, per (user, tool): for a
#: deployment that wants them (``RateLimitConfig(user_tool=SUGGESTED_USER_TOOL_WINDOWS)``).
SUGGESTED_USER_TOOL_WINDOWS: tuple[Window, ...] = (Window(60, 60.0), Window(1000, 3600.0))
#: Per (user, tool) by default: none (seed 001: limits apply "when configured").
DEFAULT_USER_TOOL_WINDOWS: tuple[Window, ...] = ()


class RateLimitConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Which calls are limited. The default limits nothing (see the module docstring)."""

    #: Per session (all tools together). Empty: no session limit (seed 001: "when configured").
    session: tuple[Window, ...] = ()
    #: Per (user, tool), unless the tool has its own entry in ``per_tool``. Empty: none.
    user_tool: tuple[Window, ...] = DEFAULT_USER_TOOL_WINDOWS
    #: Tool name -> its (user, tool) windows; an empty tuple exempts the tool.
    per_tool: dict[str, tuple[Window, ...]] = msgspec.field(default_factory=dict)


class RateLimitVerdict(msgspec.Struct, frozen=True, kw_only=True):
    allowed: bool
    #: Seconds until the call would pass; 0 when allowed.
    retry_after: float = 0.0
    #: The windows and the window that refused (``""`` when allowed).
    scope: RateLimitScope | Literal[""] = ""
    window: Window | None = None

    def describe(self, tool: str, user: str) -> str:
        if self.allowed or self.window is None:
            return "allowed"
        who = "this session" if self.scope == "session" else f"{tool} for user {user or '?'}"
        return f"{self.window.describe()} calls for {who}"


_ALLOWED = RateLimitVerdict(allowed=True)


class RateLimiter:
    """Checks and records atomically: a refused call uses no slot in any window."""

    def __init__(
        self,
        config: RateLimitConfig | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config or RateLimitConfig()
        self._clock = clock
        self._lock = threading.Lock()
        self._calls: dict[tuple[str, ...], deque[float]] = {}
        self._checks = 0

    def check(self, session_id: str, user: str, tool: str) -> RateLimitVerdict:
        """Record a call of ``tool`` by ``user`` in ``session_id`` if every window has room."""
        tool_windows = self.config.per_tool.get(tool, self.config.user_tool)
        plan: list[tuple[tuple[str, ...], Sequence[Window], RateLimitScope]] = [
            (("s", session_id), self.config.session, "session"),
            (("u", user, tool), tool_windows, "user_tool"),
        ]
        with self._lock:
            now = self._clock()
            for key, windows, scope in plan:
                refusal = self._refusal(key, windows, now, scope)
                if refusal is not None:
                    return refusal
            for key, windows, _ in plan:
                if windows:
                    self._record(key, windows, now)
            self._checks += 1
            if self._checks % 4096 == 0:
                self._prune(now)
        return _ALLOWED

    def _refusal(
        self,
        key: tuple[str, ...],
        windows: Sequence[Window],
        now: float,
        scope: RateLimitScope,
    ) -> RateLimitVerdict | None:
        calls: Sequence[float] = self._calls.get(key) or ()
        worst: RateLimitVerdict | None = None
        for window in windows:
            start = now - window.seconds
            in_window = len(calls) - _first_after(calls, start)
            if in_window >= window.limit:
                if window.limit <= 0:  # a zero limit refuses everything
                    retry = window.seconds
                else:  # the oldest call that must leave the window before one more fits
                    oldest = calls[len(calls) - window.limit]
                    retry = max(oldest + window.seconds - now, 0.0)
                if worst is None or retry > worst.retry_after:
                    worst = RateLimitVerdict(
                        allowed=False, retry_after=retry, scope=scope, window=window
                    )
        return worst

    def _record(self, key: tuple[str, ...], windows: Sequence[Window], now: float) -> None:
        calls = self._calls.get(key)
        if calls is None:
            calls = self._calls[key] = deque()
        calls.append(now)
        longest = max(w.seconds for w in windows)
        keep = max(w.limit for w in windows)
        while calls and (calls[0] <= now - longest or len(calls) > keep):
            calls.popleft()

    def _prune(self, now: float) -> None:
        horizon = max((w.seconds for w in self._all_windows()), default=0.0)
        for key in [k for k, c in self._calls.items() if not c or c[-1] <= now - horizon]:
            del self._calls[key]

    def _all_windows(self) -> list[Window]:
        windows = [*self.config.session, *self.config.user_tool]
        for per in self.config.per_tool.values():
            windows.extend(per)
        return windows

    def reset(self) -> None:
        with self._lock:
            self._calls.clear()

    def usage(self) -> Mapping[tuple[str, ...], int]:
        """Calls remembered per key (for tests and dashboards)."""
        with self._lock:
            return {k: len(v) for k, v in self._calls.items()}


def _first_after(calls: Sequence[float], start: float) -> int:
    """Index of the first call strictly after ``start`` (calls are in time order)."""
    return bisect.bisect_right(calls, start)
