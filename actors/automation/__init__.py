"""Routines: an agent's cron jobs, its heartbeat, and the routines an application defines.

A routine is a message an agent receives when its trigger fires: a schedule (a cron
expression in a time zone, an interval, one time), matching events in the log, a webhook
the application forwards, or a manual run. The ``cron`` tool lets an agent schedule its
own (seed 001), ``AgentConfig.heartbeat`` (``actors.agents.HeartbeatConfig``) wakes it with
its HEARTBEAT.md, and ``System.routines`` (:class:`Routines`) is the application's side
(seed 004's routines). Each agent's routines, their durable timers and their runs are on
its ``routines/{agent}`` stream, kept by one :class:`AgentRoutines` actor
(``routines.py``).
"""

from __future__ import annotations

from .api import Routines
from .messages import RoutineInfo
from .trigger import Trigger

__all__ = ["RoutineInfo", "Routines", "Trigger"]
