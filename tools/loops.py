"""Tool loop detection (seed 002 §7): generic repeat, known poll without progress,
ping-pong. Warn at 10, block at 20, circuit breaker at 30, over the last 30 calls.

Counts include the call being checked. A blocked call still enters the history, so a
model that keeps repeating reaches the circuit breaker, which stops every tool call of
the session until :meth:`LoopDetector.reset` (the Session calls it when a turn starts).
History is in memory, per session: a restart forgets it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from clawlog.events.domain.tool import LoopPattern

__all__ = ["LoopDetectionConfig", "LoopDetector", "LoopVerdict"]

Level = Literal["ok", "warning", "critical", "circuit_breaker"]
_SEVERITY = {"ok": 0, "warning": 1, "critical": 2, "circuit_breaker": 3}
_encoder = msgspec.json.Encoder(order="sorted")


class LoopDetectionConfig(msgspec.Struct, frozen=True, kw_only=True):
    enabled: bool = True
    history_size: int = 30
    warning_threshold: int = 10
    critical_threshold: int = 20
    circuit_breaker_threshold: int = 30
    generic_repeat: bool = True
    poll_no_progress: bool = True
    ping_pong: bool = True
    #: Known polling tools -> the ``action`` values that poll (empty: every call polls).
    poll_tools: dict[str, tuple[str, ...]] = msgspec.field(
        default_factory=lambda: {
            "process": ("poll", "status"),
            "session_status": (),
            "subagent": ("list",),
            "subagents": ("list",),
            "job_status": (),
            "job_events": (),
        }
    )
    #: Sessions remembered at once (least recently used are forgotten first).
    max_sessions: int = 10_000


class LoopVerdict(msgspec.Struct, frozen=True, kw_only=True):
    level: Level = "ok"
    #: The repetition that set ``level`` ("" when ``ok``).
    pattern: LoopPattern | Literal[""] = ""
    count: int = 0
    message: str = ""


_OK = LoopVerdict()


class _Entry:
    __slots__ = ("call_id", "result", "signature")

    def __init__(self, call_id: str, signature: tuple[str, int]) -> None:
        self.call_id, self.signature = call_id, signature
        self.result: int | None = None


class _History:
    __slots__ = ("entries", "tripped")

    def __init__(self, size: int) -> None:
        self.entries: deque[_Entry] = deque(maxlen=size)
        self.tripped: LoopVerdict | None = None


class LoopDetector:
    """Thread-safe; one instance serves every session of a pipeline."""

    def __init__(self, config: LoopDetectionConfig | None = None) -> None:
        self.config = config or LoopDetectionConfig()
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, _History] = OrderedDict()

    def check(
        self, session_id: str, call_id: str, tool: str, args: Mapping[str, Any]
    ) -> LoopVerdict:
        """Judge a new call and add it to the session's history."""
        cfg = self.config
        if not cfg.enabled:
            return _OK
        signature = (tool, _digest(args))
        polls = self._is_poll(tool, args)
        with self._lock:
            history = self._history(session_id)
            if history.tripped is not None:
                return history.tripped
            entries = list(history.entries)
            history.entries.append(_Entry(call_id, signature))
            verdict = self._judge(entries, signature, tool, polls)
            if verdict.level == "circuit_breaker":
                history.tripped = verdict
        return verdict

    def record_result(self, session_id: str, call_id: str, result: str) -> None:
        """Remember what a call returned, so polls and ping-pong can see progress."""
        if not self.config.enabled:
            return
        with self._lock:
            history = self._sessions.get(session_id)
            if history is None:
                return
            for entry in reversed(history.entries):
                if entry.call_id == call_id:
                    entry.result = hash(result)
                    return

    def reset(self, session_id: str) -> None:
        """Forget a session's history and close its circuit breaker."""
        with self._lock:
            self._sessions.pop(session_id, None)

    # -- detection ----------------------------------------------------------------------
    def _history(self, session_id: str) -> _History:
        history = self._sessions.get(session_id)
        if history is None:
            history = self._sessions[session_id] = _History(self.config.history_size)
            while len(self._sessions) > self.config.max_sessions:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(session_id)
        return history

    def _is_poll(self, tool: str, args: Mapping[str, Any]) -> bool:
        actions = self.config.poll_tools.get(tool)
        if actions is None:
            return False
        return not actions or args.get("action") in actions

    def _judge(
        self, entries: list[_Entry], signature: tuple[str, int], tool: str, polls: bool
    ) -> LoopVerdict:
        cfg = self.config
        found: list[tuple[LoopPattern, int]] = []
        if cfg.generic_repeat and not polls:
            found.append(("generic_repeat", 1 + sum(e.signature == signature for e in entries)))
        if cfg.poll_no_progress and polls:
            found.append(("poll_no_progress", _poll_count(entries, signature)))
        if cfg.ping_pong:
            found.append(("ping_pong", _ping_pong_count(entries, signature)))
        best = _OK
        for pattern, count in found:
            level = self._level(count)
            if _SEVERITY[level] > _SEVERITY[best.level]:
                best = LoopVerdict(
                    level=level,
                    pattern=pattern,
                    count=count,
                    message=_message(level, pattern, tool, count, cfg.history_size),
                )
        return best

    def _level(self, count: int) -> Level:
        cfg = self.config
        if count >= cfg.circuit_breaker_threshold:
            return "circuit_breaker"
        if count >= cfg.critical_threshold:
            return "critical"
        if count >= cfg.warning_threshold:
            return "warning"
        return "ok"


def _digest(args: Mapping[str, Any]) -> int:
    try:
        return hash(_encoder.encode(args))
    except (TypeError, ValueError):  # not JSON-like: compare by representation
        return hash(repr(sorted(args.items(), key=lambda item: str(item[0]))))


def _poll_count(entries: list[_Entry], signature: tuple[str, int]) -> int:
    """1 + earlier identical polls whose results equal the latest one, back to the
    first change (other calls in between do not matter)."""
    count, latest = 1, None
    for entry in reversed(entries):
        if entry.signature != signature:
            continue
        if entry.result is None:
            break
        if latest is None:
            latest = entry.result
        elif entry.result != latest:
            break
        count += 1
    return count


def _ping_pong_count(entries: list[_Entry], signature: tuple[str, int]) -> int:
    """Length of the A,B,A,B… tail that this call (A) extends, while neither A nor B
    returned anything new."""
    if len(entries) < 2 or entries[-1].signature == signature:
        return 1
    other = entries[-1].signature
    results: dict[tuple[str, int], int] = {}
    count = 1
    for back, entry in enumerate(reversed(entries)):
        expected = other if back % 2 == 0 else signature
        if entry.signature != expected:
            break
        if entry.result is not None:
            seen = results.setdefault(entry.signature, entry.result)
            if seen != entry.result:
                break
        count += 1
    return count if count >= 3 else 1


def _message(level: Level, pattern: LoopPattern, tool: str, count: int, history: int) -> str:
    what = {
        "generic_repeat": f"called {tool} with the same arguments {count} times in your last "
        f"{history} tool calls",
        "poll_no_progress": f"polled {tool} {count} times and it returned the same thing "
        "every time",
        "ping_pong": f"alternated between the same two tool calls {count} times without any "
        "new result",
    }[pattern]
    if level == "warning":
        return (
            f"Loop warning: you have {what}. If this is not making progress, stop and try a "
            "different approach."
        )
    if level == "critical":
        return (
            f"Blocked: you have {what}. This call was not run. Do something different, or "
            "answer the user with what you have."
        )
    return (
        f"Circuit breaker: you have {what}. Every further tool call in this session is "
        "stopped; answer the user now with what you have."
    )
