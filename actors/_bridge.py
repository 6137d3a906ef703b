"""Every crossing between actor threads and asyncio loops lives here.

* The :class:`Hub` runs one asyncio loop in its own thread. It owns all async I/O
  (the event store, HTTP clients, subprocesses). Actors hand it coroutines.
* Thread → loop: ``asyncio.run_coroutine_threadsafe``. Loop → thread: a reply object
  whose ``set`` uses ``loop.call_soon_threadsafe``.
* Never ``await`` a pykka Future on a loop: ``pykka.Future.__await__`` blocks it. An ask
  from async code sends an :class:`AskEnvelope` whose :class:`LoopReply` resolves an
  asyncio future on the asker's own loop, so the asker's loop never blocks.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

import pykka

from clawlog.events.logging import get_logger

from .errors import ActorDead, AskTimeout, HubError

__all__ = [
    "AskEnvelope",
    "Hub",
    "LoopReply",
    "ThreadReply",
    "ask_async",
    "ask_blocking",
    "run_in_thread",
]

T = TypeVar("T")
_log = get_logger(__name__)


class LoopReply:
    """Resolves an asyncio future on its loop from any thread (at most once)."""

    __slots__ = ("future", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future[Any] = loop.create_future()

    def set(self, value: Any) -> None:
        self._call(_resolve, value, None)

    def set_error(self, error: BaseException) -> None:
        self._call(_resolve, None, error)

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        # RuntimeError: the asker's loop is closed, so nobody is waiting any more.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(fn, self.future, *args)


def _resolve(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


class ThreadReply:
    """A reply for a blocking asker on a plain thread."""

    __slots__ = ("future",)

    def __init__(self) -> None:
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def set(self, value: Any) -> None:
        if not self.future.done():
            self.future.set_result(value)

    def set_error(self, error: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(error)


class Reply(Protocol):
    """Where an ask's answer goes: :class:`LoopReply`, :class:`ThreadReply`, or an
    actor's own object that turns the answer into a message (pipe-to-self)."""

    def set(self, value: Any) -> None: ...

    def set_error(self, error: BaseException) -> None: ...


class AskEnvelope:
    """A request and where its reply goes; delivered with ``tell``."""

    __slots__ = ("message", "reply")

    def __init__(self, message: Any, reply: Reply) -> None:
        self.message = message
        self.reply = reply


async def ask_async(ref: pykka.ActorRef[Any], message: Any, timeout: float, path: str) -> Any:
    """Ask from asyncio code without blocking its loop.

    The timeout is one timer handle that fails the reply's future, not an
    ``asyncio.timeout`` block: that costs about three times as much per ask (a context
    object, a reschedule, the task's cancel and uncancel), a third of an ask's own cost on
    one core (``scripts/bench_actors.py``, BENCHMARKS.md)."""
    loop = asyncio.get_running_loop()
    reply = LoopReply(loop)
    try:
        ref.tell(AskEnvelope(message, reply))
    except pykka.ActorDeadError as exc:
        raise ActorDead(f"{path} is not running") from exc
    expiry = loop.call_later(timeout, _expire, reply.future, path, type(message).__name__, timeout)
    try:
        return await reply.future
    finally:
        expiry.cancel()


def _expire(future: asyncio.Future[Any], path: str, request: str, timeout: float) -> None:
    if not future.done():
        future.set_exception(AskTimeout(f"{path} did not answer {request} within {timeout} s"))


def ask_blocking(ref: pykka.ActorRef[Any], message: Any, timeout: float, path: str) -> Any:
    """Ask from a plain thread (another actor); blocks that thread only."""
    reply = ThreadReply()
    try:
        ref.tell(AskEnvelope(message, reply))
    except pykka.ActorDeadError as exc:
        raise ActorDead(f"{path} is not running") from exc
    try:
        return reply.future.result(timeout)
    except concurrent.futures.TimeoutError as exc:
        raise AskTimeout(
            f"{path} did not answer {type(message).__name__} within {timeout} s"
        ) from exc


class Hub:
    """One asyncio loop in a dedicated thread: the owner of all async I/O."""

    def __init__(self, name: str = "clawlog-hub") -> None:
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._stopped = False

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    def stop(self) -> None:
        """Stop the loop and join its thread. Safe to call twice."""
        if self._stopped or self._loop is None:
            return
        self._stopped = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        if threading.current_thread() is not self._thread:
            self._thread.join()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None or self._stopped:
            raise HubError("the I/O hub is not running")
        return self._loop

    def in_hub_thread(self) -> bool:
        return threading.current_thread() is self._thread

    # -- running work -------------------------------------------------------------------
    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the hub from any thread; returns a thread-safe future."""
        try:
            return asyncio.run_coroutine_threadsafe(coro, self.loop)
        except HubError:
            coro.close()
            raise

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the hub and block the calling thread (never the hub) for it."""
        if self.in_hub_thread():
            coro.close()
            raise HubError("Hub.run() called on the hub's own loop: it would deadlock")
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            raise AskTimeout(f"hub call did not finish within {timeout} s") from exc

    async def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` run on the hub from another asyncio loop (the embedder's)."""
        if self.in_hub_thread():
            return await coro
        return await asyncio.wrap_future(self.submit(coro))

    def pipe(
        self,
        coro: Coroutine[Any, Any, Any],
        deliver: Callable[[Any, BaseException | None], None],
    ) -> concurrent.futures.Future[Any]:
        """Run ``coro`` on the hub; call ``deliver(value, error)`` from the hub when done.

        ``deliver`` must only enqueue (``ref.tell``): it runs on the hub's thread.
        """
        future = self.submit(coro)

        def done(f: concurrent.futures.Future[Any]) -> None:
            if f.cancelled():
                deliver(None, asyncio.CancelledError("piped operation cancelled"))
                return
            error = f.exception()
            deliver(None if error is not None else f.result(), error)

        future.add_done_callback(done)
        return future


async def run_in_thread(fn: Callable[[], T], name: str = "clawlog-blocking") -> T:
    """Run a blocking ``fn`` on a short-lived thread and await it without blocking the loop.

    Unlike ``loop.run_in_executor`` this leaves no pooled thread behind in the caller's loop.
    """
    reply = LoopReply(asyncio.get_running_loop())

    def target() -> None:
        try:
            reply.set(fn())
        except BaseException as exc:
            reply.set_error(exc)

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    try:
        return await reply.future  # type: ignore[no-any-return]
    finally:
        thread.join()
