"""The delegation part of the System API: links are made by configuration, never a model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clawlog.events.domain.delegation import LinkConfigured

from ..agents.config import validate_agent_key
from ..errors import ActorDead
from ..runtime import ActorHandle
from .directory import DelegationDirectory
from .link import DelegationLink, link_stream

if TYPE_CHECKING:
    from ..system import System

__all__ = ["DelegationApi"]


class DelegationApi:
    """Mixed into :class:`actors.system.System`."""

    def delegation_directory(self: System) -> DelegationDirectory:
        """Link targets for DELEGATION.md and delegate_search. Set ``.embedder`` to rank by
        meaning too (before registering agents, so their descriptions are embedded)."""
        directory = self.runtime.services.get("delegation_directory")
        if directory is None:
            directory = self.runtime.services["delegation_directory"] = DelegationDirectory()
        return directory  # type: ignore[no-any-return]

    async def link_agents(
        self: System,
        source: str,
        target: str,
        *,
        max_concurrent: int = 5,
        user_allow: list[str] | None = None,
        user_deny: list[str] | None = None,
        bidirectional: bool = False,
        enabled: bool = True,
    ) -> list[ActorHandle[Any]]:
        """Allow ``source`` to delegate to ``target`` (and back, if bidirectional).

        Register both agents first. Returns the link actors (one per direction).
        """
        validate_agent_key(source)
        validate_agent_key(target)
        if source == target:
            raise ValueError("an agent cannot be linked to itself")
        if max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        for key in (source, target):
            if self.actor(f"agent/{key}") is None:
                raise ActorDead(f"unknown agent {key!r}: register it before linking it")
        pairs = [(source, target)] + ([(target, source)] if bidirectional else [])
        handles = []
        for src, dst in pairs:
            configured = LinkConfigured(
                source=src,
                target=dst,
                max_concurrent=max_concurrent,
                user_allow=list(user_allow or []),
                user_deny=list(user_deny or []),
                enabled=enabled,
            )
            running = self.actor(link_stream(src, dst))
            if running is not None and running.is_alive():
                running.stop()
            handles.append(
                await self.spawn(DelegationLink, link_stream(src, dst), configured=configured)
            )
            directory = self.delegation_directory()
            directory.add_link(src, dst)
            self.prompt_for(src).add_section("DELEGATION.md", directory.prompt_section)
        return handles
