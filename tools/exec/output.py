"""The combined output of one run, fed from any thread, read from the event loop.

It keeps a bounded head and tail in memory (a run may print gigabytes), counts every
character, and wakes readers waiting for more. Results show at most 100,000 characters
of a finished run and 10,000 of a running one (seed 002 §4), head and tail kept.
"""

from __future__ import annotations

import asyncio
import codecs
import threading
from collections import deque

__all__ = ["OutputBuffer", "clip"]

#: Characters kept in memory per run (head and tail halves).
_MEMORY_CHARS = 1_000_000


def clip(text: str, cap: int) -> tuple[str, bool]:
    """``text`` within ``cap`` characters: the head and the tail, the middle replaced by a
    notice. True when something was cut."""
    if len(text) <= cap:
        return text, False
    tail = cap // 5
    notice = f"\n[… {len(text) - cap} characters of output omitted …]\n"
    head = max(cap - tail - len(notice), 0)
    return text[:head] + notice + text[len(text) - tail :], True


class OutputBuffer:
    """Thread-safe; ``wait_for`` must be awaited on the loop given to ``bind``."""

    def __init__(self, memory_chars: int = _MEMORY_CHARS) -> None:
        self._lock = threading.Lock()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._half = memory_chars // 2
        self._head: list[str] = []
        self._head_chars = 0
        self._tail: deque[str] = deque()
        self._tail_chars = 0
        self.total = 0
        self.closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed = asyncio.Event()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    # -- writing (any thread) -----------------------------------------------------------
    def feed(self, data: bytes) -> None:
        self._add(self._decoder.decode(data))

    def close(self) -> None:
        self._add(self._decoder.decode(b"", final=True))
        self.closed = True
        self._notify()

    def _add(self, text: str) -> None:
        if not text:
            return
        with self._lock:
            self.total += len(text)
            room = self._half - self._head_chars
            if room > 0:
                part = text[:room]
                self._head.append(part)
                self._head_chars += len(part)
                text = text[room:]
            if text:
                self._tail.append(text)
                self._tail_chars += len(text)
                while len(self._tail) > 1 and self._tail_chars - len(self._tail[0]) >= self._half:
                    self._tail_chars -= len(self._tail.popleft())
                if self._tail_chars > self._half and len(self._tail) == 1:
                    self._tail[0] = self._tail[0][-self._half :]
                    self._tail_chars = len(self._tail[0])
        self._notify()

    def _notify(self) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._changed.set()
        else:
            loop.call_soon_threadsafe(self._changed.set)

    # -- reading (the loop) -------------------------------------------------------------
    def text(self) -> str:
        """Everything kept: the head, a notice if the middle was dropped, the tail."""
        return self.since(0)[0]

    def since(self, offset: int) -> tuple[str, int]:
        """Output after character ``offset`` that is still kept (a notice stands for what
        was dropped from memory), and the offset it ends at: pass that next time."""
        with self._lock:
            head = "".join(self._head)
            tail = "".join(self._tail)
            end = self.total
        tail_start = end - len(tail)
        parts: list[str] = []
        if offset < len(head):
            parts.append(head[offset:])
            offset = len(head)
        if offset < tail_start:
            parts.append(f"\n[… {tail_start - offset} characters of output not kept …]\n")
            offset = tail_start
        parts.append(tail[offset - tail_start :])
        return "".join(parts), end

    async def wait_for(self, offset: int) -> None:
        """Return once there is output beyond ``offset`` or the output is closed."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        while self.total <= offset and not self.closed:
            self._changed.clear()
            if self.total > offset or self.closed:
                return
            await self._changed.wait()
