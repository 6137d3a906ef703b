"""The ``cron`` tool (seed 001, group ``automation``): an agent's jobs for itself.

A job is a routine of origin ``cron`` (``actors.automation``): at each time its schedule
names, its message comes to the agent as a turn in the job's session (by default the one
that scheduled it), and the reply is posted where the job was made (the outbox, kind
``cron``). Actions, as GoClaw and OpenClaw name them: ``status``, ``list``, ``add``,
``update`` (a patch), ``remove``, ``run`` (now), ``runs`` (its last runs).

Schedules: ``{"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Berlin"}``,
``{"kind": "every", "every_s": 3600}`` (or ``"every": "30m"``), ``{"kind": "at", "at":
"2026-12-24T18:00:00+01:00"}``. The agent's ``AgentConfig.cron`` caps how many jobs it may
have and how close together a job may run. The policy keeps the tool from subagents and,
as an owner-only tool, from anyone but the agent's owners (``AgentConfig.owner_ids``).
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar

from clawlog.events.domain.routine import RoutineDefined, RoutineTrigger
from clawlog.events.domain.timer import MISFIRE_POLICIES
from clawlog.events.streams import agent_stream

from ..agents.gateway import CallerContext
from ..agents.tools import ActorTool, answer_json, required_arg
from ..boundary import check_session_key
from ..errors import InvalidArgument, InvalidSchedule, Rejected
from .messages import (
    DefineRoutine,
    ListRoutines,
    RemoveRoutine,
    RoutineInfo,
    RoutineRuns,
    RunRoutine,
)
from .trigger import Trigger

__all__ = ["CronTool"]

_EVERY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)?\s*$")
_UNIT = {None: 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


class CronTool(ActorTool):
    name: ClassVar[str] = "cron"
    group: ClassVar[str] = "automation"
    description: ClassVar[str] = (
        "Schedule messages to yourself: at each time a job's schedule names, its message "
        "comes back to you as a new turn and your reply is posted to this conversation. "
        "action=add needs schedule and message (job_id optional); update patches a job; "
        "list, status, remove, run (now) and runs (its last runs) take job_id where needed. "
        'schedule: {"kind":"cron","expr":"0 9 * * 1-5","tz":"Europe/Berlin"} | '
        '{"kind":"every","every":"30m"} | {"kind":"at","at":"2026-12-24T18:00:00+01:00"}.'
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["status", "list", "add", "update", "remove", "run", "runs"],
            },
            "job_id": {"type": "string", "description": "the job's name"},
            "message": {"type": "string", "description": "what you are told when it runs"},
            "schedule": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["cron", "every", "at"]},
                    "expr": {"type": "string"},
                    "tz": {"type": "string"},
                    "every": {"type": "string", "description": "e.g. 90s, 30m, 2h, 1d"},
                    "every_s": {"type": "number"},
                    "at": {"type": "string", "description": "an ISO 8601 time"},
                },
                "required": ["kind"],
            },
            "session_key": {"type": "string", "description": "default: this session"},
            "enabled": {"type": "boolean"},
            "misfire": {"type": "string", "enum": list(MISFIRE_POLICIES)},
        },
        "required": ["action"],
    }

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        action = args["action"]
        if action in ("add", "update"):
            return await self._define(ctx, args, update=action == "update")
        if action == "list":
            return answer_json([_job(i) for i in await self._ask(ctx, ListRoutines(origin="cron"))])
        if action == "status":
            jobs = await self._ask(ctx, ListRoutines(origin="cron"))
            upcoming = [j.next_due for j in jobs if j.next_due is not None and j.enabled]
            return answer_json(
                {
                    "jobs": len(jobs),
                    "enabled": sum(j.enabled for j in jobs),
                    "next_run": _iso(min(upcoming)) if upcoming else None,
                }
            )
        job_id = required_arg(args, "job_id")
        if action == "remove":
            request = RemoveRoutine(
                name=job_id, origin="cron", reason=f"removed by {ctx.session_key}"
            )
            if not await self._ask(ctx, request):
                raise Rejected(f"no job {job_id!r}; action=list shows your jobs")
            return f"removed job {job_id}"
        if action == "run":
            turn_id = await self._ask(ctx, RunRoutine(name=job_id, origin="cron"))
            return f"job {job_id} is running now (turn {turn_id}); its reply comes as a message"
        runs = await self._ask(ctx, RoutineRuns(name=job_id, origin="cron"))
        return answer_json(
            [
                {"turn_id": r.turn_id, "started": _iso(r.started_at), "trigger": r.trigger}
                | {"outcome": r.outcome, "message": r.message}
                for r in runs
            ]
        )

    async def _define(self, ctx: CallerContext, args: dict[str, Any], *, update: bool) -> str:
        job_id = args.get("job_id") or ("" if update else f"job-{uuid.uuid4().hex[:6]}")
        if not job_id:
            raise Rejected("parameter 'job_id' is required to update a job")
        current = None
        if update:
            jobs = {j.name: j for j in await self._ask(ctx, ListRoutines(origin="cron"))}
            if job_id not in jobs:
                raise Rejected(f"no job {job_id!r}; action=list shows your jobs")
            current = jobs[job_id].definition
        trigger = _trigger(args["schedule"]) if "schedule" in args else None
        if trigger is None:
            if current is None:
                raise Rejected("parameter 'schedule' is required to add a job")
            trigger = current.trigger
        message = args.get("message", current.prompt if current else "")
        if not isinstance(message, str) or not message.strip():
            raise Rejected("parameter 'message' is required: what you want to be told when it runs")
        routine = RoutineDefined(
            name=job_id,
            origin="cron",
            trigger=trigger,
            prompt=message,
            session_key=_session_key(args, current.session_key if current else ctx.session_key),
            channel=current.channel if current else ctx.channel,
            chat_id=current.chat_id if current else ctx.chat_id,
            user=current.user if current else ctx.user,
            enabled=args.get("enabled", current.enabled if current else True),  # schema: bool
            misfire=args.get("misfire", current.misfire if current else "fire"),
            defined_by=ctx.session_stream or ctx.session_key,
        )
        request = DefineRoutine(routine=routine, replace=update)
        info: RoutineInfo = await self._ask(ctx, request)
        verb = "updated" if update else "added"
        when = f"next run {_iso(info.next_due)}" if info.next_due else "no run scheduled"
        return f"{verb} job {job_id}: {info.trigger}, {when}"

    async def _ask(self, ctx: CallerContext, request: Any) -> Any:
        supervisor = self.services["runtime"].lookup(agent_stream(ctx.agent))
        if supervisor is None:
            raise Rejected("this agent is not running; try again")
        return await supervisor.ask(request)


def _session_key(args: dict[str, Any], default: str) -> str:
    try:
        return check_session_key(args.get("session_key") or default)
    except InvalidArgument as exc:
        raise Rejected(exc.problem) from exc


def _trigger(spec: Any) -> RoutineTrigger:
    """The model's ``schedule`` object as a checked schedule trigger (through
    :class:`~actors.automation.Trigger`'s builders, as the application's)."""
    if not isinstance(spec, dict):
        raise Rejected('schedule must be an object such as {"kind": "every", "every": "1h"}')
    kind = spec.get("kind")
    try:
        if kind == "cron":
            trigger = Trigger.cron(str(spec.get("expr", "")), str(spec.get("tz") or "UTC"))
        elif kind == "every":
            trigger = Trigger.every(_seconds(spec))
        elif kind == "at":
            trigger = Trigger.at(str(spec.get("at", "")))  # UTC unless it has an offset
        else:
            raise Rejected("schedule.kind must be cron, every or at")
        return trigger
    except InvalidSchedule as exc:
        raise Rejected(exc.problem) from exc


def _seconds(spec: dict[str, Any]) -> float:
    if "every_s" in spec and isinstance(spec["every_s"], int | float):
        return float(spec["every_s"])
    found = _EVERY.match(str(spec.get("every", "")))
    if found is None:
        raise Rejected('schedule.every must be a duration such as "90s", "30m", "2h" or "1d"')
    return float(found.group(1)) * _UNIT[found.group(2)]


def _job(info: RoutineInfo) -> dict[str, Any]:
    return {
        "job_id": info.name,
        "schedule": info.trigger,
        "message": info.prompt,
        "session_key": info.session_key,
        "enabled": info.enabled,
        "next_run": _iso(info.next_due) if info.next_due else None,
        "runs": info.runs,
    }


def _iso(when: float | None) -> str:
    return "" if when is None else datetime.fromtimestamp(when, UTC).isoformat()
