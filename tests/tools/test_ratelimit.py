"""Sliding-window rate limits with a clock the test controls."""

from __future__ import annotations

import pytest

from clawlog.tools import RateLimitConfig
from clawlog.tools.ratelimit import (
    DEFAULT_USER_TOOL_WINDOWS,
    SUGGESTED_USER_TOOL_WINDOWS,
    RateLimiter,
    Window,
)

from .support import FakeClock


def limiter(clock: FakeClock, **config: object) -> RateLimiter:
    return RateLimiter(RateLimitConfig(**config), clock=clock)  # type: ignore[arg-type]


def test_nothing_is_limited_unless_configured() -> None:
    # Seed 001: the session's calls are limited "when configured"; nothing else is.
    assert RateLimitConfig().session == () and RateLimitConfig().user_tool == ()
    assert DEFAULT_USER_TOOL_WINDOWS == ()
    clock = FakeClock()
    limits = RateLimiter(clock=clock)
    for _ in range(5000):  # far past seed 004's 60 a minute and 1000 an hour, at one instant
        assert limits.check("main/s1", "u", "exec").allowed
    assert limits.usage() == {}  # and nothing is remembered


def test_seed_004s_limits_are_one_setting_away() -> None:
    assert (Window(60, 60.0), Window(1000, 3600.0)) == SUGGESTED_USER_TOOL_WINDOWS
    clock = FakeClock()
    limits = limiter(clock, user_tool=SUGGESTED_USER_TOOL_WINDOWS)
    for _ in range(60):
        assert limits.check("main/s1", "u", "exec").allowed
    assert not limits.check("main/s1", "u", "exec").allowed


@pytest.mark.parametrize(
    ("limit", "seconds", "error", "says"),
    [
        (-1, 60.0, ValueError, "0 or more"),
        (1.5, 60.0, ValueError, "whole number"),
        (True, 60.0, ValueError, "whole number"),
        (1, 0.0, ValueError, "above 0"),
        (1, float("inf"), ValueError, "finite"),
        (1, "60", TypeError, "number of seconds"),
    ],
)
def test_a_window_that_cannot_be_counted_is_refused(
    limit: object, seconds: object, error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        Window(limit, seconds)  # type: ignore[arg-type]


def test_the_61st_call_in_a_minute_is_refused_with_retry_after() -> None:
    clock = FakeClock()
    limits = limiter(clock, user_tool=SUGGESTED_USER_TOOL_WINDOWS)
    for _ in range(60):
        assert limits.check("main/s1", "u", "exec").allowed
        clock.advance(0.5)  # 60 calls over 30 s
    verdict = limits.check("main/s1", "u", "exec")
    assert not verdict.allowed
    assert verdict.scope == "user_tool"
    assert verdict.window == Window(60, 60.0)
    # The first call was at t=0; it leaves the window at t=60; now is t=30.
    assert verdict.retry_after == pytest.approx(30.0)
    assert verdict.describe("exec", "u") == "60 per minute calls for exec for user u"
    assert limits.check("main/s1", "v", "exec").allowed  # another user
    assert limits.check("main/s1", "u", "web_fetch").allowed  # another tool
    clock.advance(verdict.retry_after + 0.01)
    assert limits.check("main/s1", "u", "exec").allowed  # retry_after was long enough


def test_the_window_slides_instead_of_resetting() -> None:
    clock = FakeClock()
    limits = limiter(clock, user_tool=(Window(3, 10.0),))
    for delay in (0, 4, 4):  # calls at t=0, 4, 8
        clock.advance(delay)
        assert limits.check("s", "u", "t").allowed
    clock.advance(1)  # t=9: three calls in (-1, 9]
    refused = limits.check("s", "u", "t")
    assert not refused.allowed and refused.retry_after == pytest.approx(1.0)
    clock.advance(1)  # t=10: the call at t=0 left the window
    assert limits.check("s", "u", "t").allowed
    clock.advance(0.5)  # t=10.5: calls at 4, 8, 10 in the window
    assert limits.check("s", "u", "t").retry_after == pytest.approx(3.5)


def test_a_refused_call_uses_no_slot() -> None:
    clock = FakeClock()
    limits = limiter(clock, user_tool=(Window(2, 10.0),))
    assert limits.check("s", "u", "t").allowed
    assert limits.check("s", "u", "t").allowed
    for _ in range(5):
        assert not limits.check("s", "u", "t").allowed
    clock.advance(10.001)
    assert limits.check("s", "u", "t").allowed
    assert limits.check("s", "u", "t").allowed


def test_the_hourly_window_refuses_after_the_minute_windows_allow() -> None:
    clock = FakeClock()
    limits = limiter(clock, user_tool=SUGGESTED_USER_TOOL_WINDOWS)
    for _ in range(1000):
        assert limits.check("s", "u", "web_fetch").allowed
        clock.advance(1.5)  # 40 per minute: under the minute limit
    verdict = limits.check("s", "u", "web_fetch")
    assert not verdict.allowed
    assert verdict.window == Window(1000, 3600.0)
    assert verdict.retry_after == pytest.approx(3600.0 - 1500.0)
    for _ in range(100):  # the minute window keeps emptying; the hour still refuses
        clock.advance(1.5)
        verdict = limits.check("s", "u", "web_fetch")
        assert not verdict.allowed and verdict.window == Window(1000, 3600.0)


def test_users_and_tools_have_independent_counters() -> None:
    clock = FakeClock()
    limits = limiter(clock, user_tool=(Window(1, 60.0),))
    assert limits.check("s", "alice", "exec").allowed
    assert not limits.check("s", "alice", "exec").allowed
    assert limits.check("s", "bob", "exec").allowed
    assert limits.check("s", "alice", "web_fetch").allowed


def test_the_session_window_counts_every_tool_and_user_together() -> None:
    clock = FakeClock()
    limits = limiter(clock, session=(Window(3, 60.0),), user_tool=())
    for tool in ("a", "b", "c"):
        assert limits.check("main/s1", "u", tool).allowed
    verdict = limits.check("main/s1", "u", "d")
    assert not verdict.allowed and verdict.scope == "session"
    verdict = limits.check("main/s1", "v", "e")
    assert not verdict.allowed and verdict.scope == "session"
    assert limits.check("main/s2", "u", "d").allowed


def test_a_tool_can_have_its_own_windows_or_be_exempt() -> None:
    clock = FakeClock()
    limits = limiter(
        clock,
        user_tool=(Window(1, 60.0),),
        per_tool={"http": (Window(2, 60.0),), "echo": ()},
    )
    assert limits.check("s", "u", "http").allowed
    assert limits.check("s", "u", "http").allowed
    assert not limits.check("s", "u", "http").allowed
    for _ in range(50):
        assert limits.check("s", "u", "echo").allowed


def test_the_longest_wait_of_several_full_windows_is_reported() -> None:
    clock = FakeClock()
    limits = limiter(clock, user_tool=(Window(2, 10.0), Window(2, 100.0)))
    limits.check("s", "u", "t")
    clock.advance(1)
    limits.check("s", "u", "t")
    verdict = limits.check("s", "u", "t")
    assert verdict.window == Window(2, 100.0)
    assert verdict.retry_after == pytest.approx(99.0)
