"""The team part of the System API, and TEAM.md for the lead's prompt."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from clawlog.events.domain.team import TeamMember

from ..agents.config import AgentConfig
from ..agents.gateway import CallerContext
from ..boundary import Limits, check_agent_key, check_name
from ..errors import ArgumentTypeError, InvalidArgument, UnknownAgent
from ..runtime import ActorHandle
from .messages import GetBoard, TeamView
from .team import Team, team_stream

if TYPE_CHECKING:
    from ..system import System

__all__ = ["TeamApi", "team_md"]

_TEAM_ID = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


def team_md(view: TeamView) -> str:
    lines = [f"You lead team **{view.name}** (id `{view.team_id}`). Your teammates:"]
    lines += [
        f"- {agent}: {role or 'member'}" for agent, role in view.members if agent != view.lead
    ]
    lines.append(
        "Post work with team_tasks (action=create, subject, description, priority, "
        "blocked_by); teammates are activated, claim tasks and report back as messages "
        "from 'teammate:<name>'. Talk to them with team_message (send, broadcast, read)."
    )
    return "\n".join(lines)


class TeamApi:
    """Mixed into :class:`actors.system.System`."""

    async def create_team(
        self: System,
        team_id: str,
        *,
        name: str,
        lead: str,
        members: list[tuple[str, str]],
    ) -> ActorHandle[Any]:
        """Create (or reopen) a team. Register its agents first: the lead gets TEAM.md.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: an invalid ``team_id``, ``name``, ``lead``
                or ``members`` (not (agent key, role) pairs, an agent twice, the lead
                among them); names the parameter.
            UnknownAgent: (an ActorDead) the lead or a member is not registered.
            StreamOwnedElsewhere: another process runs this team (owns ``team/{id}``).
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask`.
        """
        self._check_open()
        _check_team_id(team_id)
        check_name(name, "name", self.limits, required=True)
        check_agent_key(lead, "lead")
        members = _check_members(members, self.limits)
        if lead in [m for m, _ in members]:
            raise InvalidArgument("members", "the lead is not listed among the members")
        registered = self.registered_agents()
        for parameter, key in [("lead", lead), *(("members", m) for m, _ in members)]:
            if key not in registered:
                raise UnknownAgent(key, registered, parameter)
        handle = self.actor(team_stream(team_id))
        if handle is None or not handle.is_alive():
            handle = await self.spawn(
                Team,
                team_stream(team_id),
                team_id=team_id,
                name=name,
                lead=lead,
                members=[TeamMember(agent=a, role=r) for a, r in members],
            )
        view: TeamView = await handle.ask(GetBoard())
        section_text = team_md(view)

        def section(config: AgentConfig, ctx: CallerContext) -> tuple[str, str] | None:
            return ("TEAM.md", section_text) if config.key == view.lead else None

        self.prompt_for(view.lead).add_section(f"TEAM.md:{team_id}", section)
        self.runtime.services.setdefault("teams_by_agent", {}).setdefault(view.lead, set()).add(
            team_id
        )
        for agent, _ in view.members:
            self.runtime.services["teams_by_agent"].setdefault(agent, set()).add(team_id)
        return handle

    async def team_board(self: System, team_id: str) -> TeamView:
        """The team's members and task board.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: an invalid ``team_id``.
            ActorDead: no team ``team_id`` was created in this process.
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask`.
        """
        self._check_open()
        _check_team_id(team_id)
        handle = self.actor(team_stream(team_id))
        if handle is None:
            from ..errors import ActorDead

            raise ActorDead(f"unknown team {team_id!r}: create it with system.create_team()")
        return await handle.ask(GetBoard())  # type: ignore[no-any-return]


def _check_team_id(team_id: object) -> None:
    if not isinstance(team_id, str):
        raise ArgumentTypeError("team_id", f"must be a str, not {type(team_id).__name__}")
    if _TEAM_ID.fullmatch(team_id) is None:
        raise InvalidArgument("team_id", f"invalid team id {team_id!r}: 1-64 of a-z 0-9 _ . -")


def _check_members(members: object, limits: Limits) -> list[tuple[str, str]]:
    """A list of ``(agent key, role)`` pairs, each agent once."""
    if isinstance(members, str) or not isinstance(members, list | tuple):
        raise ArgumentTypeError("members", "must be a list of (agent key, role) pairs")
    checked: list[tuple[str, str]] = []
    for member in members:
        if not isinstance(member, list | tuple) or len(member) != 2:
            raise ArgumentTypeError("members", f"must hold (agent key, role) pairs, not {member!r}")
        checked.append(
            (check_agent_key(member[0], "members"), check_name(member[1], "members", limits))
        )
    keys = [key for key, _ in checked]
    if len(set(keys)) != len(keys):
        raise InvalidArgument("members", f"an agent is listed twice: {keys}")
    return checked
