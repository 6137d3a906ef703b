"""Actors: pykka actors with typed messages on an event log, supervised, behind a System.

async with System.open("clawlog.db") as system:
    counter = await system.spawn(Counter, "counter/1")
    total = await counter.ask(Add(amount=2))
"""

from .actor import DEFERRED, EventSourcedActor
from .errors import (
    ActorCrashed,
    ActorDead,
    ActorError,
    AskTimeout,
    Escalated,
    HubError,
    Rejected,
    SystemClosed,
    TurnCancelledError,
    TurnFailedError,
)
from .hub_store import HubStore, HubSubscription
from .logging import configure_logging
from .messages import Message, Piped, Request
from .runtime import ActorHandle, Runtime
from .supervision import SupervisionPolicy
from .system import System

__all__ = [
    "DEFERRED",
    "ActorCrashed",
    "ActorDead",
    "ActorError",
    "ActorHandle",
    "AskTimeout",
    "Escalated",
    "EventSourcedActor",
    "HubError",
    "HubStore",
    "HubSubscription",
    "Message",
    "Piped",
    "Rejected",
    "Request",
    "Runtime",
    "SupervisionPolicy",
    "System",
    "SystemClosed",
    "TurnCancelledError",
    "TurnFailedError",
    "configure_logging",
]
