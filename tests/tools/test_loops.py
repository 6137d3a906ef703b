"""Loop detection (seed 002 §7): each pattern, its thresholds, the circuit breaker."""

from __future__ import annotations

import pytest

from clawlog.tools import LoopDetectionConfig
from clawlog.tools.loops import LoopDetector, LoopVerdict


def run(detector: LoopDetector, calls: list[tuple[str, dict, str | None]]) -> list[LoopVerdict]:
    """Check each call, then record its result (None: no result, e.g. refused)."""
    verdicts = []
    for n, (tool, args, result) in enumerate(calls):
        call_id = f"c{n}"
        verdicts.append(detector.check("main/s1", call_id, tool, args))
        if result is not None:
            detector.record_result("main/s1", call_id, result)
    return verdicts


def levels(verdicts: list[LoopVerdict]) -> list[str]:
    return [v.level for v in verdicts]


def test_defaults_are_the_seeds() -> None:
    config = LoopDetectionConfig()
    assert (config.history_size, config.warning_threshold) == (30, 10)
    assert (config.critical_threshold, config.circuit_breaker_threshold) == (20, 30)


@pytest.mark.parametrize("changing", [False, True], ids=["same result", "new result each time"])
def test_generic_repeat_warns_at_10_blocks_at_20_and_trips_at_30(changing: bool) -> None:
    # Results do not matter: the same arguments again and again is the loop.
    detector = LoopDetector()
    calls = [("read_file", {"path": "a"}, f"r{n}" if changing else "same") for n in range(30)]
    verdicts = run(detector, calls)
    assert levels(verdicts[:9]) == ["ok"] * 9
    assert levels(verdicts[9:19]) == ["warning"] * 10
    assert levels(verdicts[19:29]) == ["critical"] * 10
    assert verdicts[29].level == "circuit_breaker"
    assert verdicts[9].pattern == "generic_repeat" and verdicts[9].count == 10
    assert "same arguments 10 times" in verdicts[9].message


def test_different_arguments_are_not_a_repeat() -> None:
    detector = LoopDetector()
    verdicts = run(detector, [("read_file", {"path": str(n)}, "x") for n in range(40)])
    assert set(levels(verdicts)) == {"ok"}


def test_argument_order_does_not_hide_a_repeat() -> None:
    detector = LoopDetector(LoopDetectionConfig(warning_threshold=2))
    first = detector.check("s", "1", "t", {"a": 1, "b": 2})
    second = detector.check("s", "2", "t", {"b": 2, "a": 1})
    assert (first.level, second.level) == ("ok", "warning")


def test_a_poll_without_progress_is_detected() -> None:
    detector = LoopDetector()
    poll = ("process", {"action": "poll", "id": "p1"}, "still running")
    verdicts = run(detector, [poll] * 20)
    assert levels(verdicts[:9]) == ["ok"] * 9
    assert verdicts[9].level == "warning" and verdicts[9].pattern == "poll_no_progress"
    assert verdicts[19].level == "critical"


def test_a_poll_that_makes_progress_is_never_flagged() -> None:
    detector = LoopDetector()
    calls = [("process", {"action": "poll", "id": "p1"}, f"line {n}") for n in range(40)]
    verdicts = run(detector, calls)
    assert set(levels(verdicts)) == {"ok"}


def test_a_poll_counts_from_the_last_change_of_its_result() -> None:
    detector = LoopDetector(LoopDetectionConfig(warning_threshold=5))
    poll = {"action": "status", "id": "p1"}
    # Without the change, the 5th identical poll would warn; with it, the count restarts.
    calls = [("process", poll, "starting")] * 3 + [("process", poll, "running")] * 4
    verdicts = run(detector, calls)
    assert set(levels(verdicts)) == {"ok"}
    late = detector.check("main/s1", "c9", "process", poll)
    assert (late.level, late.count) == ("warning", 5)


def test_ping_pong_between_two_calls_is_detected() -> None:
    detector = LoopDetector()
    a = ("read_file", {"path": "a"}, "A")
    b = ("read_file", {"path": "b"}, "B")
    verdicts = run(detector, [a, b] * 10)
    assert levels(verdicts[:9]) == ["ok"] * 9
    assert verdicts[9].level == "warning" and verdicts[9].pattern == "ping_pong"
    assert verdicts[19].level == "critical" and verdicts[19].pattern == "ping_pong"


def test_ping_pong_with_new_results_is_progress() -> None:
    detector = LoopDetector(LoopDetectionConfig(generic_repeat=False))
    calls = []
    for n in range(10):
        calls += [("edit", {"f": "x"}, f"edit {n}"), ("test", {}, f"fail {n}")]
    assert set(levels(run(detector, calls))) == {"ok"}


def test_each_detector_can_be_switched_off() -> None:
    detector = LoopDetector(
        LoopDetectionConfig(generic_repeat=False, ping_pong=False, poll_no_progress=False)
    )
    calls = [("read_file", {"path": "a"}, "same")] * 25
    calls += [("process", {"action": "poll"}, "same")] * 25
    assert set(levels(run(detector, calls))) == {"ok"}


def test_disabled_detection_sees_nothing() -> None:
    detector = LoopDetector(LoopDetectionConfig(enabled=False))
    assert set(levels(run(detector, [("t", {}, "x")] * 40))) == {"ok"}


def test_the_circuit_breaker_stops_every_call_until_reset() -> None:
    detector = LoopDetector(
        LoopDetectionConfig(warning_threshold=2, critical_threshold=3, circuit_breaker_threshold=4)
    )
    run(detector, [("t", {}, "x")] * 4)
    other = detector.check("main/s1", "z", "different_tool", {"q": 1})
    assert other.level == "circuit_breaker"
    assert "Circuit breaker" in other.message
    assert detector.check("main/s2", "y", "t", {}).level == "ok"  # other sessions unaffected
    detector.reset("main/s1")
    assert detector.check("main/s1", "z2", "t", {}).level == "ok"


def test_thresholds_are_configurable() -> None:
    detector = LoopDetector(
        LoopDetectionConfig(warning_threshold=3, critical_threshold=5, circuit_breaker_threshold=99)
    )
    verdicts = run(detector, [("t", {}, "x")] * 5)
    assert levels(verdicts) == ["ok", "ok", "warning", "warning", "critical"]


def test_only_the_history_window_counts() -> None:
    detector = LoopDetector(LoopDetectionConfig(history_size=5, warning_threshold=4))
    calls = [("t", {}, "x")] * 3 + [("u", {"n": n}, "y") for n in range(5)] + [("t", {}, "x")]
    verdicts = run(detector, calls)
    assert verdicts[-1].level == "ok"  # the three earlier t calls fell out of the history
