"""The delegation part of the System API: links are made by configuration, never a model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clawlog.events.domain.delegation import LinkConfigured

from ..boundary import Limits, check_agent_key, check_name
from ..errors import ArgumentTypeError, InvalidArgument, UnknownAgent
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
        meaning too (before registering agents, so their descriptions are embedded).
        Never raises."""
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

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: an invalid ``source``, ``target``,
                ``max_concurrent`` (an int >= 1), ``user_allow``, ``user_deny``,
                ``bidirectional`` or ``enabled``, or ``source == target``; names it.
            UnknownAgent: (an ActorDead) ``source`` or ``target`` is not registered.
            StreamOwnedElsewhere: another process runs this link (owns its stream).
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask`.
        """
        self._check_open()
        check_agent_key(source, "source")
        check_agent_key(target, "target")
        if source == target:
            raise InvalidArgument("target", "an agent cannot be linked to itself")
        if type(max_concurrent) is not int or max_concurrent < 1:
            raise InvalidArgument(
                "max_concurrent", f"must be an int of at least 1, not {max_concurrent!r}"
            )
        user_allow = _check_users(user_allow, "user_allow", self.limits)
        user_deny = _check_users(user_deny, "user_deny", self.limits)
        for parameter, flag in (("bidirectional", bidirectional), ("enabled", enabled)):
            if not isinstance(flag, bool):
                raise ArgumentTypeError(parameter, f"must be a bool, not {flag!r}")
        registered = self.registered_agents()
        for parameter, key in (("source", source), ("target", target)):
            if key not in registered:
                raise UnknownAgent(key, registered, parameter)
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


def _check_users(users: object, parameter: str, limits: Limits) -> list[str] | None:
    if users is None:
        return None
    if isinstance(users, str) or not isinstance(users, list | tuple):
        raise ArgumentTypeError(parameter, "must be a list of user ids or None")
    return [check_name(user, parameter, limits, required=True) for user in users]
