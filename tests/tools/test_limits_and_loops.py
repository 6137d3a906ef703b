"""Rate-limit windows on a controllable clock, and each loop pattern at its thresholds."""

from __future__ import annotations

from tools import LoopDetector, RateLimitConfig, RateLimiter
from tools.ratelimit import Window


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_per_user_tool_window_refuses_the_61st_call_with_retry_after() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimitConfig(), clock=clock)
    for _ in range(60):
        assert limiter.check("a/s1", "ann", "web_fetch").allowed
        clock.now += 0.5
    refused = limiter.check("a/s1", "ann", "web_fetch")
    assert not refused.allowed and refused.scope == "user_tool"
    assert 0 < refused.retry_after <= 60
    assert limiter.check("a/s1", "bob", "web_fetch").allowed  # another user
    assert limiter.check("a/s1", "ann", "exec").allowed  # another tool
    clock.now += refused.retry_after + 0.01
    assert limiter.check("a/s1", "ann", "web_fetch").allowed  # the window slid


def test_the_hourly_window_holds_after_the_minutes_pass() -> None:
    clock = Clock()
    limiter = RateLimiter(
        RateLimitConfig(user_tool=(Window(60, 60.0), Window(100, 3600.0))), clock=clock
    )
    allowed = 0
    for _ in range(200):
        if limiter.check("a/s", "ann", "t").allowed:
            allowed += 1
        clock.now += 2.0
    assert allowed == 100
    verdict = limiter.check("a/s", "ann", "t")
    assert not verdict.allowed and verdict.window == Window(100, 3600.0)


def test_per_session_window() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimitConfig(session=(Window(3, 10.0),), user_tool=()), clock=clock)
    assert all(limiter.check("a/s", "ann", f"t{i}").allowed for i in range(3))
    refused = limiter.check("a/s", "bob", "other")
    assert not refused.allowed and refused.scope == "session"
    assert limiter.check("a/other", "ann", "t").allowed


def levels(detector: LoopDetector, calls: list[tuple[str, dict[str, object], str]]) -> list[str]:
    out = []
    for i, (tool, args, result) in enumerate(calls):
        verdict = detector.check("a/s", f"c{i}", tool, args)
        detector.record_result("a/s", f"c{i}", result)
        out.append(verdict.level)
    return out


def test_generic_repeat_warns_at_10_blocks_at_20_and_breaks_at_30() -> None:
    seen = levels(LoopDetector(), [("read", {"path": "a"}, f"r{i}") for i in range(31)])
    assert seen[:9] == ["ok"] * 9 and seen[9] == "warning"
    assert seen[19] == "critical" and seen[29] == "circuit_breaker"


def test_known_poll_without_progress() -> None:
    detector = LoopDetector()
    polls = [("process", {"action": "poll", "id": "p1"}, "still running")] * 9
    assert levels(detector, polls) == ["ok"] * 9
    verdict = detector.check("a/s", "c9", "process", {"action": "poll", "id": "p1"})
    assert (verdict.level, verdict.pattern) == ("warning", "poll_no_progress")


def test_ping_pong_between_two_calls() -> None:
    calls = []
    for i in range(24):
        calls.append(
            ("read", {"path": "a"}, "same a") if i % 2 == 0 else ("read", {"path": "b"}, "same b")
        )
    detector = LoopDetector()
    assert levels(detector, calls[:9]) == ["ok"] * 9
    verdict = detector.check("a/s", "c9", "read", {"path": "b"})
    assert (verdict.level, verdict.pattern) == ("warning", "ping_pong")


def test_reset_clears_a_tripped_breaker() -> None:
    detector = LoopDetector()
    levels(detector, [("read", {"path": "a"}, "r")] * 31)
    assert detector.check("a/s", "late", "other", {}).level == "circuit_breaker"
    detector.reset("a/s")
    assert detector.check("a/s", "fresh", "other", {}).level == "ok"
