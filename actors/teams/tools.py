"""The team tools (group ``team``): team_tasks and team_message (seed 001 §8)."""

from __future__ import annotations

from typing import Any

import msgspec

from clawlog.events.streams import team_stream

from ..agents.gateway import CallerContext
from ..agents.tools import ActorTool, required_arg
from ..errors import Rejected
from .messages import (
    Broadcast,
    ClaimTask,
    CompleteTask,
    CreateTask,
    ListTasks,
    ReadMessages,
    SearchTasks,
    SendTeamMessage,
    UpdateTask,
)

__all__ = ["TEAM_TOOLS", "TeamMessageTool", "TeamTasksTool"]

_TASK_FIELDS = ("task_id", "subject", "priority", "status", "claimed_by", "blocked_by", "result")


class _TeamTool(ActorTool):
    group = "team"

    def _team(self, ctx: CallerContext, args: dict[str, Any]) -> Any:
        teams = sorted(self.services.get("teams_by_agent", {}).get(ctx.agent, ()))
        team_id = args.get("team") or (teams[0] if len(teams) == 1 else None)
        if team_id is None:
            raise Rejected(
                "you are in no team"
                if not teams
                else f"you are in several teams; pass team= one of {', '.join(teams)}"
            )
        if team_id not in teams:
            raise Rejected(f"you are not a member of team {team_id!r}")
        handle = self.services["runtime"].lookup(team_stream(team_id))
        if handle is None:
            raise Rejected(f"team {team_id!r} is not running")
        return handle


def _tasks(items: list[Any]) -> str:
    return msgspec.json.encode([{k: getattr(t, k) for k in _TASK_FIELDS} for t in items]).decode()


class TeamTasksTool(_TeamTool):
    name = "team_tasks"
    description = (
        "The team task board. list (filter active|completed|all, order priority|newest), "
        "create (subject, description, priority, blocked_by), claim (task_id), complete "
        "(task_id, result), search (query), update (task_id, priority, blocked_by)."
    )
    parameters = {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["list", "create", "claim", "complete", "search", "update"],
            },
            "team": {"type": "string"},
            "task_id": {"type": "string"},
            "subject": {"type": "string"},
            "description": {"type": "string"},
            "priority": {"type": "integer"},
            "blocked_by": {"type": "array", "items": {"type": "string"}},
            "assignee": {"type": "string"},
            "result": {"type": "string"},
            "query": {"type": "string"},
            "filter": {"type": "string", "enum": ["active", "completed", "all"]},
            "order": {"type": "string", "enum": ["priority", "newest"]},
        },
        "required": ["action"],
    }

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        team, by, action = self._team(ctx, args), ctx.agent, args["action"]
        if action == "list":
            return _tasks(
                await team.ask(
                    ListTasks(
                        by=by,
                        filter=args.get("filter", "active"),
                        order=args.get("order", "priority"),
                    )
                )
            )
        if action == "search":
            return _tasks(await team.ask(SearchTasks(by=by, query=required_arg(args, "query"))))
        if action == "create":
            task = await team.ask(
                CreateTask(
                    by=by,
                    subject=required_arg(args, "subject"),
                    description=args.get("description", ""),
                    priority=args.get("priority", 0),
                    blocked_by=args.get("blocked_by", []),
                    assignee=args.get("assignee", ""),
                    origin_session=ctx.session_stream,
                    correlation_id=ctx.correlation_id or None,
                )
            )
            return f"created {task.task_id} ({task.status})"
        task_id = required_arg(args, "task_id")
        if action == "claim":
            await team.ask(ClaimTask(by=by, task_id=task_id))
            return f"you claimed {task_id}; do it, then complete it with your result"
        if action == "complete":
            await team.ask(CompleteTask(by=by, task_id=task_id, result=args.get("result", "")))
            return f"{task_id} completed"
        await team.ask(
            UpdateTask(
                by=by,
                task_id=task_id,
                priority=args.get("priority"),
                description=args.get("description"),
                blocked_by=args.get("blocked_by"),
            )
        )
        return f"{task_id} updated"


class TeamMessageTool(_TeamTool):
    name = "team_message"
    description = "The team mailbox: send (to, text), broadcast (text), read (your unread)."
    parameters = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["send", "broadcast", "read"]},
            "team": {"type": "string"},
            "to": {"type": "string"},
            "text": {"type": "string"},
        },
        "required": ["action"],
    }

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        team, by, action = self._team(ctx, args), ctx.agent, args["action"]
        if action == "read":
            mail = await team.ask(ReadMessages(by=by))
            return msgspec.json.encode([{"from": m.sender, "text": m.text} for m in mail]).decode()
        if action == "broadcast":
            await team.ask(Broadcast(by=by, text=required_arg(args, "text")))
            return "broadcast sent"
        await team.ask(
            SendTeamMessage(by=by, to=required_arg(args, "to"), text=required_arg(args, "text"))
        )
        return "sent"


TEAM_TOOLS = (TeamTasksTool, TeamMessageTool)
