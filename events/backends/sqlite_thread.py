"""The SQLite writer's own thread: one sqlite3 connection, group commit, one reply per batch.

Why not aiosqlite for writing (reads still use it): aiosqlite is itself one thread and a
queue, but it answers every call with its own future, so the loop has to decide each
batch, hand it over and wait for it before the next can start. A thread that owns the
connection takes everything queued the moment a commit is done: while one batch is on
disk the next is already forming on the loop, and the writer never waits for the loop to
schedule it. Every append is one ``SimpleQueue.put`` on the loop; every batch is one
transaction and one ``call_soon_threadsafe`` back.

With N producers each awaiting its own append, batches settle at all N: the thread wakes
on the first put but gets the GIL only when the loop goes idle, after every answered
producer has queued again. Splitting them into two alternating batches (so one fsync
overlaps the loop's work on the other) measured a third slower: each ``sqlite3_step``
drops the GIL, and the thread then waits for the busy loop to give it back.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from ..errors import EventStoreError
from ..telemetry import METRIC_BACKEND, instruments, metrics_enabled
from .sqlite_chain import upgrade
from .sqlite_schema import check_or_create_schema, check_schema
from .sqlite_writer import AppendRequest, BatchWriter, Outcome, SnapshotRequest

__all__ = ["Request", "WriterThread"]

Request = AppendRequest | SnapshotRequest
#: ``(batch, outcomes or the error that failed the whole batch, head after it)``.
Resolver = Callable[[list[Request], "list[Outcome] | BaseException", int], None]
_STOP = None
_METRIC_ATTRIBUTES = {METRIC_BACKEND: "sqlite"}


class WriterThread:
    """Owns the writer connection. ``submit`` from the loop; answers arrive on the loop."""

    def __init__(self, path: str, synchronous: str, writer: BatchWriter, resolve: Resolver) -> None:
        self._path = path
        self._synchronous = synchronous
        self._writer = writer
        self._resolve = resolve
        self._queue: queue.SimpleQueue[Request | None] = queue.SimpleQueue()
        self.submit: Callable[[Request], None] = self._queue.put  # type: ignore[assignment]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opened: asyncio.Future[int] | None = None
        self._stopped: asyncio.Future[None] | None = None
        self._thread = threading.Thread(target=self._run, name=f"clawlog-writer:{path}")
        self._thread.daemon = True  # close() joins it; a forgotten store never blocks exit

    async def start(self) -> int:
        """Open and check the file on the thread; return the log head."""
        self._loop = loop = asyncio.get_running_loop()
        self._opened = loop.create_future()
        self._stopped = loop.create_future()
        self._thread.start()
        return await self._opened

    async def stop(self) -> None:
        """Commit everything submitted so far, close the connection, end the thread."""
        if self._stopped is None:  # never started
            return
        self._queue.put(_STOP)
        await asyncio.shield(self._stopped)

    # -- on the thread ------------------------------------------------------------------
    def _run(self) -> None:
        try:
            conn = self._connect()
        except BaseException as exc:  # handed to the caller of start()
            self._reply(_fail, self._opened, exc)
            self._reply(_succeed, self._stopped, None)
            return
        self._reply(_succeed, self._opened, self._writer.head)
        try:
            self._serve(conn)
        finally:
            conn.close()
            self._reply(_succeed, self._stopped, None)

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self._path, isolation_level=None)
        except sqlite3.Error as exc:
            raise EventStoreError(f"cannot open {self._path}: {exc}") from exc
        try:
            # Identify the file before any pragma: a foreign database must stay untouched.
            check_schema(conn, self._path)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            conn.execute("PRAGMA busy_timeout=5000")
            check_or_create_schema(conn, self._path)
            if self._writer.chained:
                upgrade(conn, self._path)  # a schema 1 log gets its chain (sqlite_chain.py)
            self._writer.load_head(conn, self._path)
        except BaseException:
            conn.close()
            raise
        return conn

    def _serve(self, conn: sqlite3.Connection) -> None:
        get, get_nowait = self._queue.get, self._queue.get_nowait
        limit, writer = self._writer.max_batch, self._writer
        while True:
            batch: list[Request | None] = [get()]  # sleep until there is work
            with contextlib.suppress(queue.Empty):
                while len(batch) < limit:  # then take everything queued meanwhile
                    batch.append(get_nowait())
            stopping = batch[-1] is _STOP  # close() queues it after every accepted append
            if stopping:
                batch.pop()
            if batch:
                requests: list[Request] = batch  # type: ignore[assignment]
                outcomes: list[Outcome] | BaseException
                try:
                    outcomes = writer.commit(conn, requests)
                except Exception as exc:  # every caller must get an answer, whatever went wrong
                    outcomes = exc
                self._reply(self._resolve, requests, outcomes, writer.head)
                if writer.committed and metrics_enabled():
                    # After the reply: the callers need not wait for the metric.
                    meters = instruments()
                    meters.record(meters.append_batch_size, writer.committed, _METRIC_ATTRIBUTES)
            if stopping:
                return

    def _reply(self, fn: Callable[..., None], *args: Any) -> None:
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            self._loop.call_soon_threadsafe(fn, *args)


def _succeed(future: asyncio.Future[Any] | None, value: Any) -> None:
    if future is not None and not future.done():
        future.set_result(value)


def _fail(future: asyncio.Future[Any] | None, exc: BaseException) -> None:
    if future is not None and not future.done():
        future.set_exception(exc)
