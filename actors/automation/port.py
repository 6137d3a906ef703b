"""How an AgentSupervisor reaches its routines actor (``runtime.services["routines"]``).

The agents package never imports this one (its routines actor sends to the agent's
sessions through ``actors.agents``): the System installs this port, as it does the
delegation and agent ports the tools use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from clawlog.events.streams import routines_stream

from ..agents.routine_config import RoutinesSetup
from .messages import (
    DefineRoutine,
    EnableRoutine,
    ListRoutines,
    RemoveRoutine,
    RoutineRuns,
    RunRoutine,
    SetHeartbeat,
)
from .routines import AgentRoutines

__all__ = ["RoutinesPort"]

_REQUESTS = (DefineRoutine, EnableRoutine, RemoveRoutine, ListRoutines, RunRoutine, RoutineRuns)


class RoutinesPort:
    def accepts(self, message: object) -> bool:
        """True for a request the agent's routines actor answers."""
        return isinstance(message, _REQUESTS)

    def prepare(self, message: Any, config: Any) -> Any:
        """``message`` as the routines actor gets it: a cron job (``origin="cron"``) under
        the agent's :class:`~actors.agents.CronLimits` (``config.cron``)."""
        if isinstance(message, DefineRoutine) and message.routine.origin == "cron":
            limits = config.cron
            return msgspec.structs.replace(
                message, max_jobs=limits.max_jobs, min_interval_s=limits.min_interval_s
            )
        return message

    def path(self, agent: str) -> str:
        return routines_stream(agent)

    def start(self, spawn: Callable[..., Any], agent: str, setup: RoutinesSetup) -> Any:
        """Start ``agent``'s routines actor with the supervisor's ``spawn``."""
        return spawn(
            AgentRoutines,
            routines_stream(agent),
            agent=agent,
            heartbeat=setup.heartbeat,
            read_heartbeat=setup.read_heartbeat,
            scrub=setup.scrub,
        )

    def configure(self, routines: Any, setup: RoutinesSetup) -> None:
        """Tell a running routines actor the agent's (new) heartbeat and scrubber."""
        routines.tell(
            SetHeartbeat(
                heartbeat=setup.heartbeat, read_heartbeat=setup.read_heartbeat, scrub=setup.scrub
            )
        )
