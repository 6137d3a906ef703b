"""An agent's heartbeat and the limits of its cron jobs (parts of ``AgentConfig``; the
routines that run them are :mod:`actors.automation`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from clawlog.events.domain.timer import MisfirePolicy

__all__ = ["CronLimits", "HeartbeatConfig", "RoutinesSetup", "quiet_reply"]


class HeartbeatConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Wake the agent every ``every_s`` seconds with its HEARTBEAT.md as the message.

    The file is read when the heartbeat runs (a context file of the agent: the workspace's
    or ``AgentConfig.context_files``); while it is missing or blank the heartbeat is
    skipped. A reply that starts or ends with ``ok_token`` and says at most
    ``ack_max_chars`` more is "nothing needs doing": recorded in the session, never posted
    to the outbox (OpenClaw's convention).
    """

    every_s: float = 1800.0
    #: The session the heartbeat talks in, and where a reply that matters is posted
    #: ("" = that session's own channel and chat).
    session_key: str = "heartbeat"
    channel: str = ""
    chat_id: str = ""
    user: str = ""
    ok_token: str = "HEARTBEAT_OK"
    ack_max_chars: int = 300
    #: A heartbeat due while the process was down runs once at start (``fire``) or waits
    #: for its next period (``skip``).
    misfire: MisfirePolicy = "fire"

    def __post_init__(self) -> None:
        if not self.every_s >= 60:
            raise ValueError(f"heartbeat every_s must be at least 60 seconds, not {self.every_s}")
        if not self.ok_token.strip():
            raise ValueError("heartbeat ok_token must be a non-empty word")


class CronLimits(msgspec.Struct, frozen=True, kw_only=True):
    """What the ``cron`` tool lets an agent schedule for itself."""

    max_jobs: int = 20
    #: Two runs of one job at least this far apart (a cron expression's closest runs, an
    #: interval).
    min_interval_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_jobs < 0 or self.min_interval_s < 0:
            raise ValueError("cron limits cannot be negative")


@dataclass(frozen=True, slots=True)
class RoutinesSetup:
    """What an agent's routines actor gets from its supervisor (at start and at each
    reconfiguration): the heartbeat, how to read HEARTBEAT.md now, and the scrubber its
    recorded run messages go through."""

    heartbeat: HeartbeatConfig | None
    read_heartbeat: Callable[[], str | None]
    scrub: Callable[[str], str]


def quiet_reply(config: HeartbeatConfig | None, text: str) -> bool:
    """True when a heartbeat's reply says nothing needs doing (see HeartbeatConfig)."""
    token = config.ok_token if config is not None else "HEARTBEAT_OK"
    limit = config.ack_max_chars if config is not None else 300
    stripped = text.strip()
    if stripped.startswith(token):
        rest = stripped[len(token) :]
    elif stripped.endswith(token):
        rest = stripped[: -len(token)]
    else:
        return False
    return len(rest.strip(" \n\t.!:-")) <= limit
