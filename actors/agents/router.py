"""Which process serves which session, when several share one PostgreSQL log.

There is no cluster: each process decides from the log and the lease table alone.

- **A session is served where it is leased.** A message for a session no live process
  holds is served by the process it reaches (it takes the lease); one for a session
  another process holds goes to that session's inbox (:mod:`.remote`).
- **The inbox wakes the owner.** The router follows ``inbox.message_sent`` events: one for
  a session leased here wakes it (it reads its inbox); one for a session nobody holds is
  taken over here (if the placement allows).
- **A dead owner's sessions are taken over.** Every half lease the router asks for leases
  whose owner stopped renewing (``expired_leases``) and takes those sessions over: each
  resumes its unfinished turn from the log and reads its inbox. A sender waiting for a
  reply does the same for its session.
- **An agent's routines run in one process.** The same scan starts, in a process that
  runs the agent, the routines whose lease another process let go (expired or released):
  their timers fire there from then on.
- **Placement** (:class:`Placement`) says which agents and sessions this process serves;
  ``System.drain()`` makes it serve none, so its sessions move to the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Collection
from typing import Any

import msgspec

from clawlog.events import Lease
from clawlog.events.domain.inbox import InboxMessageSent
from clawlog.events.logging import get_logger
from clawlog.events.streams import agent_stream, routines_stream, session_stream

from .messages import ReadInbox, StartRoutines, TakeOver

__all__ = ["Placement", "SessionRouter"]

_log = get_logger(__name__)


class Placement(msgspec.Struct, frozen=True, kw_only=True):
    """Which sessions this process serves (takes the lease of) on a shared log.

    ``agents``: only these agents' sessions (None: every registered agent's);
    ``refuse_agents``: never these agents' sessions; ``refuse_session_prefixes``: never
    sessions whose key starts with one of these. A message for a session this process does
    not serve goes to the process that does, through the log.
    """

    agents: frozenset[str] | None = None
    refuse_agents: frozenset[str] = frozenset()
    refuse_session_prefixes: tuple[str, ...] = ()

    def serves(self, agent: str, session_key: str) -> bool:
        if self.agents is not None and agent not in self.agents:
            return False
        if agent in self.refuse_agents:
            return False
        return not session_key.startswith(self.refuse_session_prefixes)

    @classmethod
    def of(
        cls,
        agents: Collection[str] | None = None,
        refuse_agents: Collection[str] = (),
        refuse_session_prefixes: Collection[str] = (),
    ) -> Placement:
        return cls(
            agents=frozenset(agents) if agents is not None else None,
            refuse_agents=frozenset(refuse_agents),
            refuse_session_prefixes=tuple(refuse_session_prefixes),
        )


class SessionRouter:
    """One per System on a shared log; its work runs on the I/O hub."""

    def __init__(self, runtime: Any, placement: Placement | None = None) -> None:
        self._runtime = runtime
        self.placement = placement or Placement()
        #: ``System.drain()``: serve nothing any more.
        self.draining = False
        self._tasks: list[asyncio.Task[None]] = []

    def serves(self, agent: str, session_key: str) -> bool:
        return not self.draining and self.placement.serves(agent, session_key)

    def serves_here(self, agent: str, session_key: str) -> bool:
        """Whether a session that is not running here should start here (blocking: from
        an actor thread): this process serves it, and no live process holds its lease
        (one query; the claim at its start decides between processes that race)."""
        if not self.serves(agent, session_key):
            return False
        stream = session_stream(agent, session_key)
        ownership = self._runtime.ownership
        lease = self._runtime.run(ownership.backend.leases([stream])).get(stream)
        return _free(lease, but=ownership.owner)

    # -- on the hub ---------------------------------------------------------------------
    async def start(self) -> None:
        store = self._runtime.store
        head = await store.head_position()
        self._tasks = [
            asyncio.create_task(self._follow_inboxes(head), name="clawlog-inboxes"),
            asyncio.create_task(self._scan_orphans(), name="clawlog-orphans"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tasks = []

    def take_over(self, agent: str, session_key: str) -> None:
        """Serve (agent, session_key) here if nobody holds it and the placement allows
        (from the hub; the lease decides between racing processes)."""
        if not self.serves(agent, session_key):
            return
        asyncio.get_running_loop().create_task(self._take_over(agent, session_key))

    def _arrived(self, recorded: Any) -> None:
        """An inbox message: to its session if it runs here (as is, no read), else to
        whoever may serve it."""
        event = recorded.event
        stream = session_stream(event.agent, event.session_key)
        if self._runtime.ownership.holds(stream):
            arrived = ReadInbox(session_key=event.session_key, version=recorded.version, sent=event)
            session = self._runtime.lookup(stream)
            if session is not None and session.is_alive():
                session.tell(arrived)  # straight to it: one hop fewer
            else:
                self._tell(event.agent, arrived)
        else:
            self.take_over(event.agent, event.session_key)

    async def is_free(self, agent: str, session_key: str) -> bool:
        """No live process holds the session's lease (released, expired or none; on the
        hub)."""
        stream = session_stream(agent, session_key)
        return _free((await self._runtime.ownership.backend.leases([stream])).get(stream))

    async def _take_over(self, agent: str, session_key: str) -> None:
        stream = session_stream(agent, session_key)
        ownership = self._runtime.ownership
        if ownership.holds(stream):
            self._tell(agent, ReadInbox(session_key=session_key))
            return
        if await self.is_free(agent, session_key):
            self._tell(agent, TakeOver(session_key=session_key))

    async def _follow_inboxes(self, head: int) -> None:
        store = self._runtime.store
        while True:
            try:
                async with store.subscribe(
                    head + 1, types=["inbox.message_sent"], skip_corrupt=True
                ) as live:
                    async for recorded in live:
                        head = recorded.position
                        event = recorded.event
                        if isinstance(event, InboxMessageSent):
                            self._arrived(recorded)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a store error: follow again from where it stopped
                _log.warning("following the inboxes failed; following again", error=str(exc))
                await asyncio.sleep(1.0)  # backoff while the store is away

    async def _scan_orphans(self) -> None:
        ownership = self._runtime.ownership
        while True:
            await asyncio.sleep(ownership.ttl_s / 2)  # the scan's period
            if self.draining:
                continue
            try:
                expired = await ownership.backend.expired_leases("session/", 1000)
            except Exception as exc:
                _log.warning("could not look for sessions of stopped processes", error=str(exc))
                continue
            for lease in expired:
                _, agent, session_key = lease.stream.split("/", 2)
                self.take_over(agent, session_key)
            try:
                orphaned = await self._orphaned_routines()
            except Exception as exc:
                _log.warning("could not look for routines nobody runs", error=str(exc))
                continue
            for agent in orphaned:  # each agent's routines run somewhere
                self._tell(agent, StartRoutines())

    async def _orphaned_routines(self) -> list[str]:
        """The agents run here whose routines another process ran and stopped running
        (their lease expired or was released): the agent's supervisor starts them here,
        if it can take the lease. An agent whose routines were never leased has none to
        run (defining one starts them), and routines leased here are running here."""
        ownership = self._runtime.ownership
        agents = [
            handle.path.removeprefix("agent/")
            for handle in self._runtime.running()
            if handle.path.startswith("agent/")
        ]
        streams = {
            routines_stream(agent): agent
            for agent in agents
            if not ownership.holds(routines_stream(agent))
        }
        if not streams:
            return []
        leases = await ownership.backend.leases(list(streams))
        return [streams[stream] for stream, lease in leases.items() if _free(lease)]

    def _tell(self, agent: str, message: Any) -> None:
        supervisor = self._runtime.lookup(agent_stream(agent))
        if supervisor is not None:  # an agent this process does not run: not its work
            supervisor.tell(message)


def _free(lease: Lease | None, *, but: str = "") -> bool:
    """No live process other than ``but`` holds ``lease``: there is none, it expired or
    was released (its time is the server's; a few seconds of skew between machines only
    delays a takeover: claiming decides, atomically), or it is ``but``'s."""
    return lease is None or lease.expires_at <= time.time() or (bool(but) and lease.owner == but)
