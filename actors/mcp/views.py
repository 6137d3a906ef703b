"""Each server's published view, copy-on-write: what every agent's gateway reads.

Only a server's McpConnection actor publishes its view (after appending the events that
changed it); readers in any thread take an immutable snapshot without locking. Asyncio
code can wait for a condition on the views (``wait_until``) without polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Mapping
from typing import NamedTuple

from clawlog.tools import Scrubber

from .grants import Grant, filter_tools, resolve_access
from .tool import McpTool

__all__ = ["ServerView", "ServerViews", "Views"]

Views = Mapping[str, "ServerView"]
_CACHE_LIMIT = 1024


class ServerView(NamedTuple):
    """One server as agents see it."""

    name: str
    #: The connection's state (connected, reconnecting, failed...).
    state: str
    #: True while its tools are offered (connected, tools discovered).
    available: bool
    #: Every tool of its last discovery, offered or not.
    tools: tuple[McpTool, ...]
    agent_grants: Mapping[str, Grant]
    user_grants: Mapping[str, Grant]
    #: Redacts the server's configured secrets.
    scrubber: Scrubber


class ServerViews:
    """The published views of one System's servers. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: dict[str, ServerView] = {}
        self._version = 0
        self._visible: dict[tuple[int, str, str], list[McpTool]] = {}
        self._waiters: list[
            tuple[asyncio.AbstractEventLoop, Callable[[Views], bool], asyncio.Future[None]]
        ] = []

    @property
    def version(self) -> int:
        """Grows with every change: gateways resynchronize their registries on it."""
        return self._version

    def snapshot(self) -> Views:
        """Every server's view now (an immutable mapping: publishing replaces it)."""
        return self._views

    def publish(self, view: ServerView) -> None:
        with self._lock:
            self._views = {**self._views, view.name: view}
            self._changed()

    def withdraw(self, name: str) -> None:
        with self._lock:
            views = dict(self._views)
            views.pop(name, None)
            self._views = views
            self._changed()

    def _changed(self) -> None:
        self._version += 1
        self._visible = {}
        views, waiters, self._waiters = self._views, self._waiters, []
        for waiter in waiters:
            loop, predicate, future = waiter
            if predicate(views):
                with contextlib.suppress(RuntimeError):  # the waiter's loop is closed
                    loop.call_soon_threadsafe(_resolve, future)
            else:
                self._waiters.append(waiter)

    # -- queries ------------------------------------------------------------------------
    def all_tools(self) -> list[McpTool]:
        """Every tool of every server, offered or not (gateways register these)."""
        return [tool for view in self._views.values() for tool in view.tools]

    def tools_for(self, agent: str, user: str = "") -> list[McpTool]:
        """The tools ``agent`` may use when acting for ``user`` now: granted, permitted
        by the grants' lists, from servers that are up."""
        key = (self._version, agent, user)
        found = self._visible.get(key)
        if found is not None:
            return found
        found = []
        for view in self._views.values():
            if not view.available:
                continue
            access = resolve_access(view.agent_grants, view.user_grants, agent, user)
            if access is None:
                continue
            by_pair = {(t.remote_name, t.name): t for t in view.tools}
            found.extend(by_pair[pair] for pair in filter_tools(access, by_pair))
        if len(self._visible) < _CACHE_LIMIT:
            self._visible[key] = found
        return found

    async def wait_until(self, predicate: Callable[[Views], bool], timeout: float) -> None:
        """Return once ``predicate(views)`` holds (checked at every change); TimeoutError
        after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if predicate(self._views):
                return
            self._waiters.append((loop, predicate, future))
        try:
            async with asyncio.timeout(timeout):
                await future
        finally:
            with self._lock:
                self._waiters = [w for w in self._waiters if w[2] is not future]


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
