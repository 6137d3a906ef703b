"""Actors: pykka actors with typed messages on an event log, supervised, behind a System.

async with System.open("clawlog.db") as system:
    counter = await system.spawn(Counter, "counter/1")
    total = await counter.ask(Add(amount=2))
"""

from .actor import DEFERRED, EventSourcedActor
from .boundary import Limits
from .errors import (
    ActorCrashed,
    ActorDead,
    ActorError,
    ActorUnavailable,
    ArgumentTypeError,
    AskTimeout,
    Escalated,
    HubError,
    InvalidArgument,
    MessageTooLarge,
    Rejected,
    SystemClosed,
    TurnCancelledError,
    TurnFailedError,
    UnknownAgent,
)
from .hub_store import HubStore, HubSubscription
from .messages import Message, Piped, Request
from .outbox import Outbox, OutboxMessage
from .runtime import ActorHandle, Runtime
from .supervision import SupervisionPolicy
from .system import System

__all__ = [
    "DEFERRED",
    "ActorCrashed",
    "ActorDead",
    "ActorError",
    "ActorHandle",
    "ActorUnavailable",
    "ArgumentTypeError",
    "AskTimeout",
    "Escalated",
    "EventSourcedActor",
    "HubError",
    "HubStore",
    "HubSubscription",
    "InvalidArgument",
    "Limits",
    "Message",
    "MessageTooLarge",
    "Outbox",
    "OutboxMessage",
    "Piped",
    "Rejected",
    "Request",
    "Runtime",
    "SupervisionPolicy",
    "System",
    "SystemClosed",
    "TurnCancelledError",
    "TurnFailedError",
    "UnknownAgent",
]
