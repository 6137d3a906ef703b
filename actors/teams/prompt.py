"""TEAM.md: the section of a team lead's prompt that names its teammates and the team tools.

``System.create_team`` adds it to the lead's prompt; a replay rebuilds it from the log.
"""

from __future__ import annotations

from .messages import TeamView

__all__ = ["team_md"]


def team_md(view: TeamView) -> str:
    """The TEAM.md text for the lead of ``view``'s team."""
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
