"""Memory documents as a fold of events (seed 001 §3 MemoryInterceptor).

``MEMORY.md``, ``memory.md`` and ``memory/*`` are documents in the log, not files on
disk. A user's own document takes priority over the global (agent-level) one of the same
path. Writing a ``.md`` document indexes it (:class:`MemoryIndex`) for ``memory_search``.
:meth:`MemoryStore.apply` is idempotent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import NamedTuple

from clawlog.events import Event
from clawlog.events.domain.workspace import MemoryDocumentDeleted, MemoryDocumentWritten
from clawlog.events.streams import agent_stream

from ..errors import VirtualStoreUnavailable
from .memory_index import MemoryHit, MemoryIndex
from .stores import Recorder, Scrub, no_scrub

__all__ = ["MemoryDocument", "MemoryStore", "is_memory_path"]


def is_memory_path(rel: str) -> bool:
    """True for the workspace-relative paths the memory store owns."""
    return rel in ("MEMORY.md", "memory.md") or (rel.startswith("memory/") and rel != "memory/")


class MemoryDocument(NamedTuple):
    path: str
    content: str
    #: ``""`` for a global document.
    user: str


class MemoryStore:
    """Every agent's memory documents, their full-text index, thread-safe reads."""

    def __init__(
        self,
        record: Recorder | None = None,
        *,
        events: Iterable[Event] = (),
        stream_for: Callable[[str], str] = agent_stream,
        scrub: Scrub = no_scrub,
    ) -> None:
        self._record = record
        self._stream_for = stream_for
        self._scrub = scrub
        self._lock = threading.Lock()
        self._docs: dict[tuple[str, str, str], str] = {}
        self.index = MemoryIndex()
        for event in events:
            self.apply(event)

    # -- the fold -----------------------------------------------------------------------
    def apply(self, event: Event) -> None:
        match event:
            case MemoryDocumentWritten():
                with self._lock:
                    self._docs[(event.agent, event.user, event.path)] = event.content
                if event.path.endswith(".md"):
                    self.index.index(event.agent, event.user, event.path, event.content)
            case MemoryDocumentDeleted():
                with self._lock:
                    self._docs.pop((event.agent, event.user, event.path), None)
                self.index.remove(event.agent, event.user, event.path)
            case _:
                pass

    # -- reads --------------------------------------------------------------------------
    def get(self, agent: str, user: str, path: str) -> MemoryDocument | None:
        """``user``'s document, else the global one."""
        with self._lock:
            for owner in dict.fromkeys((user, "")):
                found = self._docs.get((agent, owner, path))
                if found is not None:
                    return MemoryDocument(path, found, owner)
        return None

    def documents(self, agent: str, user: str, prefix: str = "") -> list[MemoryDocument]:
        """What ``user`` sees: their documents and the global ones they do not shadow."""
        with self._lock:
            seen: dict[str, MemoryDocument] = {}
            for (doc_agent, owner, path), content in self._docs.items():
                if doc_agent != agent or owner not in (user, "") or not path.startswith(prefix):
                    continue
                if path not in seen or owner:
                    seen[path] = MemoryDocument(path, content, owner)
        return [seen[p] for p in sorted(seen)]

    def search(self, agent: str, user: str, query: str, limit: int = 6) -> list[MemoryHit]:
        with self._lock:
            shadowed = frozenset(
                path for (a, owner, path) in self._docs if user and a == agent and owner == user
            )
        return self.index.search(agent, user, query, limit, shadowed)

    # -- writes -------------------------------------------------------------------------
    async def write(
        self, agent: str, user: str, path: str, content: str, *, call_id: str = ""
    ) -> None:
        if not is_memory_path(path):
            raise ValueError(f"{path!r} is not a memory document path")
        event = MemoryDocumentWritten(
            agent=agent, path=path, content=self._scrub(content), user=user, call_id=call_id
        )
        await self._append(agent, event)

    async def delete(self, agent: str, user: str, path: str, *, call_id: str = "") -> None:
        event = MemoryDocumentDeleted(agent=agent, path=path, user=user, call_id=call_id)
        await self._append(agent, event)

    async def _append(self, agent: str, event: Event) -> None:
        if self._record is None:
            raise VirtualStoreUnavailable(
                "memory documents are read-only here: no recorder is configured for them"
            )
        await self._record(self._stream_for(agent), [event])
        self.apply(event)

    def close(self) -> None:
        self.index.close()
