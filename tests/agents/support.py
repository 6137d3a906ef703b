"""Models and helpers for agent tests (wire-level fakes only for what cannot run here)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from clawlog.actors.providers import ModelReply, ModelRequest, reply


class GatedModel:
    """A model whose replies wait for the test to release them (a slow provider)."""

    def __init__(self, replies: list[ModelReply]) -> None:
        self._replies = list(replies)
        self.requests: list[ModelRequest] = []
        self.started = threading.Event()
        self.release = Gate()
        self.cancelled = threading.Event()

    @property
    def name(self) -> str:
        return "gated"

    @property
    def provider(self) -> str:
        return "scripted"

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return self._replies.pop(0) if self._replies else reply("done")


async def wait_threading_event(event: threading.Event, timeout: float = 60) -> None:
    loop = asyncio.get_running_loop()
    ok = await loop.run_in_executor(None, event.wait, timeout)
    assert ok, "timed out waiting for the event"


def types(events: list[Any]) -> list[str]:
    return [e.type for e in events]


class Gate:
    """A flag a test opens from its own thread; coroutines on any loop wait on it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    async def wait(self) -> None:
        event = asyncio.Event()
        with self._lock:
            if self._open:
                return
            self._waiters.append((asyncio.get_running_loop(), event))
        await event.wait()

    def set(self) -> None:
        with self._lock:
            self._open = True
            waiters, self._waiters = self._waiters, []
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)

    def clear(self) -> None:
        with self._lock:
            self._open = False

    def is_set(self) -> bool:
        return self._open
