"""Starting supervised actors: reserve the stream, start the thread, wait for recovery."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clawlog.events import validate_stream

from .internal import Ready
from .runtime import ActorHandle, Runtime
from .supervision import SupervisionPolicy

if TYPE_CHECKING:
    from .actor import EventSourcedActor

__all__ = ["launch", "start_actor"]


def launch(
    runtime: Runtime,
    cls: type[EventSourcedActor[Any]],
    path: str,
    parent: ActorHandle[Any] | None,
    policy: SupervisionPolicy | None,
    *args: Any,
    **kwargs: Any,
) -> ActorHandle[Any]:
    """Start the actor's thread without waiting for it to recover its stream."""
    validate_stream(path)
    with runtime.reserve(path):
        ref = cls.start(runtime, path, parent, policy, *args, **kwargs)
        handle: ActorHandle[Any] = ActorHandle(runtime, path, cls.kind, ref)
        runtime.register(handle)
    return handle


def start_actor(
    runtime: Runtime,
    cls: type[EventSourcedActor[Any]],
    path: str,
    parent: ActorHandle[Any] | None,
    policy: SupervisionPolicy | None,
    *args: Any,
    **kwargs: Any,
) -> ActorHandle[Any]:
    """Start the actor and block until it has folded its stream (from an actor thread).

    If it cannot (its stream is unreadable, the store unreachable), the error is raised and
    the actor is stopped: a child its parent never got a handle for must not live on."""
    handle = launch(runtime, cls, path, parent, policy, *args, **kwargs)
    try:
        handle.ask_blocking(Ready())
    except BaseException:
        handle.stop()
        raise
    return handle
