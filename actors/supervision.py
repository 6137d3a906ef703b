"""Supervision policy: restart with exponential backoff, escalate past a failure budget."""

from __future__ import annotations

import hashlib
import time
import traceback
from collections import deque
from types import TracebackType

import msgspec

__all__ = ["FailureWindow", "SupervisionPolicy", "traceback_digest"]


class SupervisionPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How a supervisor treats a failing child."""

    #: More failures than this within ``window_s`` escalate to the parent.
    max_failures: int = 3
    window_s: float = 60.0
    #: Delay before restart attempt n is ``min(backoff_max_s, backoff_base_s * 2**(n-1))``.
    backoff_base_s: float = 0.05
    backoff_max_s: float = 5.0

    def __post_init__(self) -> None:
        if self.max_failures < 0 or self.window_s <= 0:
            raise ValueError("max_failures must be >= 0 and window_s > 0")
        if self.backoff_base_s < 0 or self.backoff_max_s < self.backoff_base_s:
            raise ValueError("need 0 <= backoff_base_s <= backoff_max_s")

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before restart ``attempt`` (1-based)."""
        return min(self.backoff_max_s, self.backoff_base_s * 2 ** max(attempt - 1, 0))


class FailureWindow:
    """Failure times within the policy's sliding window."""

    def __init__(self, policy: SupervisionPolicy) -> None:
        self.policy = policy
        self._times: deque[float] = deque()

    def record(self, now: float | None = None) -> int:
        """Record a failure; return how many failures the window now holds."""
        now = time.monotonic() if now is None else now
        self._times.append(now)
        while self._times and now - self._times[0] > self.policy.window_s:
            self._times.popleft()
        return len(self._times)

    @property
    def count(self) -> int:
        """Failures the window held at the last ``record``."""
        return len(self._times)

    def exceeded(self) -> bool:
        return len(self._times) > self.policy.max_failures


def traceback_digest(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> str:
    """First 16 hex digits of sha256 over the formatted traceback: groups identical crashes."""
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
