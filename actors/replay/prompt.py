"""The prompt sections a recorded agent had from the rest of the System, rebuilt from the
log: TEAM.md for each team it led (``team.created``), so an unchanged re-run sends the
system prompt the recording sent. Sections the log does not describe (DELEGATION.md, an
application's own) are not rebuilt: pass ``rerun(prompt=...)``, or read the
``system_prompt`` context note."""

from __future__ import annotations

from clawlog.events import LogReader
from clawlog.events.domain.team import TeamCreated

from ..agents.config import AgentConfig
from ..agents.gateway import CallerContext
from ..agents.prompt import PromptBuilder, PromptSection
from ..teams.messages import TeamView
from ..teams.prompt import team_md

__all__ = ["recorded_prompt"]

_PAGE = 1000
_TYPES = ["team.created"]


async def recorded_prompt(log: LogReader, agent: str, before: int) -> PromptBuilder:
    """A prompt builder with the sections ``agent`` had at position ``before``.

    Only the log before ``before`` is read (it used to be read to its end: on a log of a
    million events that was most of a short re-run's time)."""
    builder = PromptBuilder()
    position = 1
    while position < before and (page := await log.read_all(position, _PAGE, types=_TYPES)):
        for recorded in page:
            if recorded.position >= before:
                return builder
            event = recorded.event
            if isinstance(event, TeamCreated) and event.lead == agent:
                builder.add_section(f"TEAM.md:{event.team_id}", _team_section(event))
        position = page[-1].position + 1
    return builder


def _team_section(event: TeamCreated) -> PromptSection:
    members = [(event.lead, "lead")] + [
        (m.agent, m.role) for m in event.members if m.agent != event.lead
    ]
    view = TeamView(
        team_id=event.team_id, name=event.name, lead=event.lead, members=members, tasks=[]
    )
    text = team_md(view)

    def section(config: AgentConfig, ctx: CallerContext) -> tuple[str, str] | None:
        return ("TEAM.md", text) if config.key == event.lead else None

    return section
