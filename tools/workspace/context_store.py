"""Context files as a fold of events (seed 001 §3 ContextFileInterceptor).

Seven files are never on disk: SOUL.md, IDENTITY.md, AGENTS.md, TOOLS.md, HEARTBEAT.md,
USER.md and BOOTSTRAP.md. Each exists at the agent level and, per user, as that user's
copy. Routing by agent kind:

- ``open`` agents: every file is per user; a user without their own copy reads the
  agent-level file (the template).
- ``predefined`` agents: only USER.md is per user; the others are agent-level.

The agent-level content starts from the agent's registered configuration
(``agent.registered`` → ``config["context_files"]`` and ``config["kind"]``) and is
overridden by ``workspace.context_file_*`` events. Writing BOOTSTRAP.md empty deletes it
(the first-run instructions are done). :meth:`ContextStore.apply` is idempotent, so the
owning actor may fold what it appends even if the writing tool already did.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Literal, NamedTuple

from clawlog.events import Event
from clawlog.events.domain.agent import AgentRegistered
from clawlog.events.domain.workspace import ContextFileDeleted, ContextFileWritten
from clawlog.events.streams import agent_stream

from ..errors import VirtualStoreUnavailable
from .stores import Recorder, Scrub, no_scrub

__all__ = ["CONTEXT_FILES", "ContextStore", "ContextTarget"]

#: seed 001 §3, in system-prompt order.
CONTEXT_FILES: tuple[str, ...] = (
    "SOUL.md",
    "IDENTITY.md",
    "AGENTS.md",
    "TOOLS.md",
    "HEARTBEAT.md",
    "USER.md",
    "BOOTSTRAP.md",
)
AgentKind = Literal["open", "predefined"]


class ContextTarget(NamedTuple):
    """Where a context file of one caller lives: ``user == ""`` is the agent level."""

    agent: str
    name: str
    user: str

    @property
    def scope(self) -> str:
        return "user" if self.user else "agent"


class ContextStore:
    """Agent-level and per-user context files of every agent; thread-safe reads."""

    def __init__(
        self,
        record: Recorder | None = None,
        *,
        events: Iterable[Event] = (),
        stream_for: Callable[[str], str] = agent_stream,
        scrub: Scrub = no_scrub,
        default_kind: AgentKind = "predefined",
    ) -> None:
        self._record = record
        self._stream_for = stream_for
        self._scrub = scrub
        self._default_kind: AgentKind = default_kind
        self._lock = threading.Lock()
        self._templates: dict[tuple[str, str], str] = {}
        self._kinds: dict[str, AgentKind] = {}
        self._files: dict[ContextTarget, str] = {}
        #: Deleted files: an agent-level one hides its template, a user's one the
        #: agent-level fallback (BOOTSTRAP.md done for that user).
        self._deleted: set[ContextTarget] = set()
        for event in events:
            self.apply(event)

    # -- the fold -----------------------------------------------------------------------
    def apply(self, event: Event) -> None:
        match event:
            case ContextFileWritten():
                target = ContextTarget(event.agent, event.name, event.user)
                with self._lock:
                    self._files[target] = event.content
                    self._deleted.discard(target)
            case ContextFileDeleted():
                target = ContextTarget(event.agent, event.name, event.user)
                with self._lock:
                    self._files.pop(target, None)
                    self._deleted.add(target)
            case AgentRegistered():
                self._register(event.key, event.config)
            case _:
                pass

    def _register(self, agent: str, config: dict[str, object]) -> None:
        kind = config.get("kind")
        files = config.get("context_files")
        with self._lock:
            if kind in ("open", "predefined"):
                self._kinds[agent] = kind  # type: ignore[assignment]
            if isinstance(files, dict):
                for key in [k for k in self._templates if k[0] == agent]:
                    del self._templates[key]
                for name, content in files.items():
                    if name in CONTEXT_FILES and isinstance(content, str):
                        self._templates[(agent, name)] = content

    def set_kind(self, agent: str, kind: AgentKind) -> None:
        """Declare an agent's kind when its ``agent.registered`` events are not folded."""
        with self._lock:
            self._kinds[agent] = kind

    def kind(self, agent: str) -> AgentKind:
        return self._kinds.get(agent, self._default_kind)

    # -- reads (also actors.agents.prompt.ContextSource) --------------------------------
    def agent_file(self, agent: str, name: str) -> str | None:
        with self._lock:
            found = self._files.get(ContextTarget(agent, name, ""))
            if found is None and ContextTarget(agent, name, "") not in self._deleted:
                found = self._templates.get((agent, name))
        return found

    def user_file(self, agent: str, user: str, name: str) -> str | None:
        if not user:
            return None
        with self._lock:
            return self._files.get(ContextTarget(agent, name, user))

    def target(self, agent: str, user: str, name: str) -> ContextTarget:
        """Where ``user``'s ``name`` is written (seed 001 §3 routing)."""
        if name not in CONTEXT_FILES:
            raise ValueError(f"{name!r} is not a context file")
        per_user = self.kind(agent) == "open" or name == "USER.md"
        return ContextTarget(agent, name, user if per_user else "")

    def read(self, agent: str, user: str, name: str) -> str | None:
        """What ``user`` sees as ``name``: their copy, else (open agents) the agent file."""
        target = self.target(agent, user, name)
        if target.user:
            found = self.user_file(agent, user, name)
            with self._lock:
                deleted = target in self._deleted
            if found is not None or deleted or self.kind(agent) == "predefined":
                return found
        return self.agent_file(agent, name)

    def names(self, agent: str, user: str) -> list[str]:
        """The context files that exist for ``user`` of ``agent``."""
        return [n for n in CONTEXT_FILES if self.read(agent, user, n) is not None]

    # -- writes -------------------------------------------------------------------------
    async def write(
        self, target: ContextTarget, content: str, *, call_id: str = ""
    ) -> Literal["written", "deleted"]:
        """Record the new content (BOOTSTRAP.md written empty is deleted instead)."""
        if target.name == "BOOTSTRAP.md" and not content.strip():
            await self.delete(target, call_id=call_id)
            return "deleted"
        event = ContextFileWritten(
            agent=target.agent,
            name=target.name,
            content=self._scrub(content),
            user=target.user,
            call_id=call_id,
        )
        await self._append(target.agent, event)
        return "written"

    async def delete(self, target: ContextTarget, *, call_id: str = "") -> None:
        event = ContextFileDeleted(
            agent=target.agent, name=target.name, user=target.user, call_id=call_id
        )
        await self._append(target.agent, event)

    async def _append(self, agent: str, event: Event) -> None:
        if self._record is None:
            raise VirtualStoreUnavailable(
                "context files are read-only here: no recorder is configured for them"
            )
        await self._record(self._stream_for(agent), [event])
        self.apply(event)
