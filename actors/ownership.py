"""One owner process per actor stream when several processes share a store.

With a backend that implements :class:`events.backends.base.LeaseBackend` (PostgreSQL),
an actor takes a lease on its stream before it folds it; the System renews its leases in
the background and releases them at stop. Each lease has an **epoch** that goes up every
time the stream changes hands, and every append of an owner carries its lease
(:meth:`token`): the server refuses an append whose epoch is no longer the stream's
(:class:`~clawlog.events.Fenced`), so a process that was paused past its lease (a GC
pause, a frozen VM) and woke after another took the stream over can never write to it.
A renewal that finds a lease gone tells its actor to step back at once.

Starting an actor for a stream another live process owns fails with
:class:`StreamOwnedElsewhere` naming the owner: a message for such a session goes to
its owner through the log (:mod:`actors.agents.remote`). A lease whose owner stopped
renewing expires after :attr:`ttl_s` seconds; another process then takes the stream over.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from typing import Any

from clawlog.events.backends.base import LeaseBackend, LeaseToken
from clawlog.events.logging import get_logger

from .errors import StreamOwnedElsewhere
from .internal import LeaseLost

__all__ = ["DEFAULT_LEASE_TTL_S", "StreamOwnership"]

#: Seconds a lease lasts without renewal (renewed every third of it).
DEFAULT_LEASE_TTL_S = 30.0
_log = get_logger(__name__)


class StreamOwnership:
    def __init__(self, runtime: Any, ttl_s: float = DEFAULT_LEASE_TTL_S) -> None:
        self.runtime = runtime
        self.ttl_s = ttl_s
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        backend = runtime.store.backend
        self._leases: LeaseBackend | None = backend if isinstance(backend, LeaseBackend) else None
        self._renewer: asyncio.Task[None] | None = None
        #: The leases this process holds, by stream (read from actor threads, changed
        #: under the GIL by whole assignments).
        self._held: dict[str, LeaseToken] = {}

    @property
    def enabled(self) -> bool:
        return self._leases is not None

    @property
    def backend(self) -> LeaseBackend | None:
        return self._leases

    def claim(self, stream: str) -> None:
        """Take the lease of ``stream`` (blocking; call from an actor thread)."""
        if self._leases is None:
            return
        leases = self.runtime.run(self._leases.acquire_leases([stream], self.owner, self.ttl_s))
        lease = leases[stream]
        if lease.owner != self.owner:
            raise StreamOwnedElsewhere(stream, lease.owner)
        self._held = {**self._held, stream: LeaseToken(owner=self.owner, epoch=lease.epoch)}

    def token(self, stream: str) -> LeaseToken | None:
        """The lease an append to ``stream`` presents (None: no leases, or none held)."""
        return self._held.get(stream) if self._held else None

    def holds(self, stream: str) -> bool:
        return stream in self._held

    def release(self, stream: str) -> None:
        if self._leases is None or stream not in self._held:
            return
        self._held = {s: t for s, t in self._held.items() if s != stream}
        if self.runtime.closing_store:
            return
        try:
            self.runtime.run(self._leases.release_leases([stream], self.owner))
        except Exception as exc:  # expiry releases it anyway
            _log.warning("could not release a lease", stream=stream, error=str(exc))

    def forget(self, stream: str) -> None:
        """Drop a lease that is no longer this process's (taken over): nothing is written."""
        self._held = {s: t for s, t in self._held.items() if s != stream}

    async def start(self) -> None:
        """Start renewing (on the hub loop)."""
        if self._leases is not None and self._renewer is None:
            self._renewer = asyncio.create_task(self._renew(), name="clawlog-lease-renewer")

    async def stop(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            await asyncio.gather(self._renewer, return_exceptions=True)
            self._renewer = None
        if self._leases is not None:
            self._held = {}
            try:
                await self._leases.release_leases(None, self.owner)
            except Exception as exc:
                _log.warning("could not release leases at close", error=str(exc))

    async def _renew(self) -> None:
        assert self._leases is not None
        while True:
            await asyncio.sleep(self.ttl_s / 3)  # the renewal period, not a wait for anyone
            held = set(self._held)  # claimed while renewing: not judged by this renewal
            try:
                renewed = set(await self._leases.renew_leases(self.owner, self.ttl_s))
            except Exception as exc:
                _log.error("lease renewal failed", error=str(exc))
                continue
            for stream in held - renewed:
                if stream in self._held:
                    self._lost(stream)

    def _lost(self, stream: str) -> None:
        """Another process took ``stream`` over: its actor here steps back now (its next
        append would be refused anyway)."""
        _log.warning("lease lost: another process took the stream over", stream=stream)
        self.forget(stream)
        handle = self.runtime.lookup(stream)
        if handle is not None:
            handle.tell(LeaseLost())
