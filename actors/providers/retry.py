"""Retries with exponential backoff and jitter for retryable provider errors."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import msgspec

from ..errors import ModelError, ModelRateLimited

__all__ = ["RetryPolicy", "with_retries"]

T = TypeVar("T")


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """429 (honouring Retry-After), 5xx, timeouts and connection errors are retried."""

    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    jitter: float = 0.25

    def delay(self, attempt: int, error: ModelError) -> float:
        if isinstance(error, ModelRateLimited) and error.retry_after is not None:
            return min(error.retry_after, self.max_delay_s)
        backoff = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        return backoff * (1 + random.uniform(-self.jitter, self.jitter))


async def with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> T:
    """Run ``call`` until it succeeds, fails for good, or attempts run out.

    The error finally raised carries ``attempts`` (how many calls were made).
    """
    attempt = 1
    while True:
        try:
            return await call()
        except ModelError as error:
            error.attempts = attempt  # type: ignore[attr-defined]
            if not error.retryable or attempt >= policy.max_attempts:
                raise
            await sleep(policy.delay(attempt, error))
            attempt += 1
