"""The application's side of routines: ``System.routines``.

    from clawlog import Trigger

    routines = system.routines
    await routines.define("ops", "morning", "Summarize last night's refusals.",
                          Trigger.cron("0 8 * * 1-5", tz="Europe/Berlin"), session_key="daily")
    await routines.define("ops", "on-refusal", "A tool call was refused: look into it.",
                          Trigger.on_event("tool.call_refused"), cooldown_s=300)
    await routines.define("ops", "deploys", "A deploy happened:", Trigger.webhook())
    await routines.webhook("ops", "deploys", request_body)   # from your HTTP handler
    for routine in await routines.list("ops"): ...

Every call is a coroutine, safe from the application's loop; arguments are checked before
anything is recorded (a wrong one raises ``InvalidArgument`` naming it). Each run is a turn
in the routine's session; its reply goes to the outbox (kind ``routine``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from clawlog.events.domain.routine import RoutineDefined, RoutineTrigger
from clawlog.events.domain.timer import MISFIRE_POLICIES, MisfirePolicy
from clawlog.events.folds.routines import RunRecord

from ..boundary import (
    Limits,
    check_flag,
    check_name,
    check_seconds,
    check_session_key,
    check_text,
)
from ..errors import ArgumentTypeError, InvalidArgument
from ..runtime import ActorHandle
from .messages import (
    DefineRoutine,
    EnableRoutine,
    ListRoutines,
    RemoveRoutine,
    RoutineInfo,
    RoutineRuns,
    RunRoutine,
)
from .routines import HEARTBEAT

__all__ = ["Routines"]


class Routines:
    """The routines of a System's agents (``origin="api"``; ``list`` shows every origin)."""

    def __init__(
        self, agent: Callable[[str], ActorHandle[Any]], limits: Callable[[], Limits]
    ) -> None:
        self._agent = agent
        self._limits = limits

    async def define(
        self,
        agent: str,
        name: str,
        prompt: str,
        trigger: RoutineTrigger,
        *,
        session_key: str = "routines",
        channel: str = "",
        chat_id: str = "",
        user: str = "",
        enabled: bool = True,
        misfire: MisfirePolicy = "fire",
        grace_s: float = 60.0,
        cooldown_s: float = 0.0,
    ) -> RoutineInfo:
        """Define routine ``name`` of ``agent`` (or redefine it: its runs and event cursor
        go on). ``trigger``: a :class:`~actors.automation.Trigger`. ``misfire``: what a
        scheduled run found overdue by more than ``grace_s`` does (``fire`` once, or
        ``skip``); ``cooldown_s``: the least time between two runs."""
        limits = self._limits()
        if not isinstance(trigger, RoutineTrigger):
            raise ArgumentTypeError(
                "trigger",
                "must be a Trigger.cron/every/at/on_event/webhook/manual(...), not "
                + type(trigger).__name__,
            )
        if misfire not in MISFIRE_POLICIES:
            raise InvalidArgument("misfire", f"must be one of {', '.join(MISFIRE_POLICIES)}")
        routine = RoutineDefined(
            name=check_name(name, "name", limits, required=True),
            origin="api",
            trigger=trigger,
            prompt=check_text(prompt, limits, "prompt"),
            session_key=check_session_key(session_key),
            channel=check_name(channel, "channel", limits),
            chat_id=check_name(chat_id, "chat_id", limits),
            user=check_name(user, "user", limits),
            enabled=check_flag(enabled, "enabled"),
            misfire=misfire,
            grace_s=check_seconds(grace_s, "grace_s"),
            cooldown_s=check_seconds(cooldown_s, "cooldown_s"),
        )
        request = DefineRoutine(routine=routine)
        return await self._ask(agent, request)  # type: ignore[no-any-return]

    async def remove(self, agent: str, name: str) -> bool:
        """Remove routine ``name``, the application's or one of the agent's cron jobs (its
        pending timer is cancelled); False if there is none. The heartbeat is the agent's
        config: register the agent again without it."""
        name = check_name(name, "name", self._limits(), required=True)
        if name == HEARTBEAT:
            raise InvalidArgument("name", "the heartbeat comes from AgentConfig.heartbeat")
        request = RemoveRoutine(name=name, reason="removed by the application")
        return await self._ask(agent, request)  # type: ignore[no-any-return]

    async def enable(self, agent: str, name: str, enabled: bool = True) -> RoutineInfo:
        """Turn routine ``name`` (any origin) on or off: off, its schedule's timer is
        cancelled and its events and webhooks do not run it; on again, a schedule goes on
        from now and an event trigger from the log's head."""
        request = EnableRoutine(
            name=check_name(name, "name", self._limits(), required=True),
            enabled=check_flag(enabled, "enabled"),
        )
        return await self._ask(agent, request)  # type: ignore[no-any-return]

    async def list(self, agent: str) -> list[RoutineInfo]:
        """Every routine of ``agent``: the application's, its cron jobs and its heartbeat."""
        return await self._ask(agent, ListRoutines())  # type: ignore[no-any-return]

    async def run(self, agent: str, name: str) -> str:
        """Run routine ``name`` now; returns its run's turn id. Raises ``Rejected`` (with
        the reason, also recorded) when it does not run: disabled, cooldown, busy."""
        request = RunRoutine(
            name=check_name(name, "name", self._limits(), required=True), trigger="manual"
        )
        return await self._ask(agent, request)  # type: ignore[no-any-return]

    async def webhook(
        self, agent: str, name: str, payload: str | bytes | Mapping[str, Any] = ""
    ) -> str:
        """Forward a webhook to routine ``name`` (one with ``Trigger.webhook()``): its
        prompt and ``payload`` (text, UTF-8 bytes, or a mapping sent as JSON) become the
        run's message. Returns the run's turn id; the payload's SHA-256 is recorded."""
        limits = self._limits()
        if isinstance(payload, bytes):
            try:
                payload = payload.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidArgument("payload", "bytes must be UTF-8 text") from exc
        elif isinstance(payload, Mapping):
            payload = msgspec.json.encode(dict(payload)).decode()
        elif not isinstance(payload, str):
            raise ArgumentTypeError(
                "payload", f"must be str, bytes or a mapping, not {type(payload).__name__}"
            )
        if payload:
            check_text(payload, limits, "payload")
        request = RunRoutine(
            name=check_name(name, "name", limits, required=True), trigger="webhook", payload=payload
        )
        return await self._ask(agent, request)  # type: ignore[no-any-return]

    async def runs(self, agent: str, name: str) -> builtins.list[RunRecord]:
        """Routine ``name``'s last runs, newest last (the log holds all of them)."""
        request = RoutineRuns(name=check_name(name, "name", self._limits(), required=True))
        return await self._ask(agent, request)  # type: ignore[no-any-return]

    async def _ask(self, agent: str, request: Any) -> Any:
        return await self._agent(agent).ask(request)
