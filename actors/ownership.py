"""One owner process per actor stream when several processes share a store.

With a backend that implements :class:`events.backends.base.LeaseBackend` (PostgreSQL),
an actor takes a lease on its stream before it folds it, the System renews its leases
in the background and releases them at stop. A second process that starts an actor for a
stream it does not own fails at once with :class:`StreamOwnedElsewhere` naming the
owner; if it wrote anyway (an expired lease, a bug), ``expected_version`` still makes
the write fail loudly instead of corrupting the stream.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from typing import Any

from clawlog.events.backends.base import LeaseBackend
from clawlog.events.logging import get_logger

from .errors import StreamOwnedElsewhere

__all__ = ["StreamOwnership"]

_log = get_logger(__name__)


class StreamOwnership:
    def __init__(self, runtime: Any, ttl_s: float = 30.0) -> None:
        self.runtime = runtime
        self.ttl_s = ttl_s
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        backend = runtime.store.backend
        self._leases: LeaseBackend | None = backend if isinstance(backend, LeaseBackend) else None
        self._renewer: asyncio.Task[None] | None = None

    @property
    def enabled(self) -> bool:
        return self._leases is not None

    def claim(self, stream: str) -> None:
        """Take the lease of ``stream`` (blocking; call from an actor thread)."""
        if self._leases is None:
            return
        refused = self.runtime.run(self._leases.acquire_leases([stream], self.owner, self.ttl_s))
        if stream in refused:
            raise StreamOwnedElsewhere(stream, refused[stream])

    def release(self, stream: str) -> None:
        if self._leases is None or self.runtime.closing_store:
            return
        try:
            self.runtime.run(self._leases.release_leases([stream], self.owner))
        except Exception as exc:  # expiry releases it anyway
            _log.warning("could not release a lease", stream=stream, error=str(exc))

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
            try:
                await self._leases.release_leases(None, self.owner)
            except Exception as exc:
                _log.warning("could not release leases at close", error=str(exc))

    async def _renew(self) -> None:
        assert self._leases is not None
        while True:
            await asyncio.sleep(self.ttl_s / 3)
            try:
                await self._leases.renew_leases(self.owner, self.ttl_s)
            except Exception as exc:
                _log.error("lease renewal failed", error=str(exc))
