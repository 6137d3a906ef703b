"""Runs projections: catch up from each checkpoint, then follow the live log.

Each batch of events is applied to every projection inside ONE SQLite transaction that
also moves that projection's checkpoint, so a crash between (or during) batches never
applies an event twice nor skips one (exactly once). A projection whose handler raises is
marked failed at that position, with the error; the others keep going.

A row of the log that cannot be decoded (a corrupt payload) fails, at its position, the
projections that read its type (the envelope-only ones still get its envelope); a page
SQLite cannot read at all raises :class:`~clawlog.events.StoreDamaged` from ``catch_up``.
A runner made with ``skip_corrupt=True`` goes on past both, for good (the checkpoints
move past them): a corrupt row is left out for every projection that would have read
it (``runner.skipped`` lists its position); rows SQLite cannot read are stepped over with
:class:`~clawlog.events.LogPages`, which reads every readable row around them
(``runner.damaged`` lists the ranges, whose rows no projection got: their types are
unknown). Each is logged as a warning. Only a log whose head cannot be read, or whose
events table is gone, leaves no way round: that StoreDamaged propagates.

A projection that starts from position 0 (new to the file, or reset by a version change)
is folded without its plain indexes, which ``catch_up`` builds once at its end: a third of
the cost of keeping them up row by row. A reader of it meanwhile is slower, never wrong.

While open, a runner feeds the ``clawlog.projection.lag`` gauge (OpenTelemetry, read only when
the application set a meter provider): per projection, the newest log head the runner has seen
minus the projection's checkpoint, from values it keeps anyway, so an observation queries nothing.

The read models live in their own SQLite file (``clawlog.views.db`` next to
``clawlog.db``), written by one aiosqlite connection: a whole batch is one call on its
thread, so the event loop never blocks on SQLite and the log's writer never waits for us.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Literal

import aiosqlite

from clawlog.events import CorruptEvent, EventStore, StoreDamaged
from clawlog.events.logging import get_logger
from clawlog.events.telemetry import register_projection_lag

from ._apply import (
    Batch,
    CorruptRow,
    ProjectionStatus,
    apply_batch,
    create_indexes,
    prepare,
)
from ._db import connect_views, on_thread, views_path_for
from ._reading import ReadPlan
from .base import Projection, validate_projections
from .errors import NotCaughtUp, ProjectionError, ProjectionFailed, ReadModelsUnavailable

__all__ = ["ProjectionRunner", "ProjectionStatus"]

_log = get_logger(__name__)
Progress = Callable[[int, int], None]


class ProjectionRunner:
    """Feeds ``projections`` from ``store`` into the read-model file ``views``.

    ``views=None`` puts it next to an SQLite log (``clawlog.db`` → ``clawlog.views.db``).
    Use ``async with ProjectionRunner(...) as runner:`` then ``await runner.catch_up()``
    or ``runner.start()`` (catch up, then follow live until stopped).

    ``skip_corrupt``: leave rows whose payload cannot be decoded out (their positions
    collect in ``skipped``) instead of failing the projections that read them there,
    and step over rows the log cannot read (their ranges collect in ``damaged``)
    instead of raising :class:`~clawlog.events.StoreDamaged`."""

    def __init__(
        self,
        store: EventStore,
        views: str | Path | None,
        projections: Sequence[Projection],
        *,
        batch_size: int = 2000,
        building: bool = False,
        skip_corrupt: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        validate_projections(projections)
        self.store = store
        self.path = Path(views) if views is not None else _default_views(store)
        self.projections = list(projections)
        self.batch_size = batch_size
        self.skip_corrupt = skip_corrupt
        #: Positions of the corrupt rows this runner left out (``skip_corrupt``), in the
        #: order it met them, each once: rows a projection had already passed are not in it.
        self.skipped: list[int] = []
        self._skipped: set[int] = set()
        #: ``(first, last)`` position ranges of rows the log could not read at all (a
        #: damaged page) that this runner stepped over (``skip_corrupt``), in order.
        self.damaged: list[tuple[int, int]] = []
        self._building = building
        self._indexes_deferred = False
        self._plan = ReadPlan(store, self.projections, skip_corrupt)
        self._conn: aiosqlite.Connection | None = None
        self._statuses: dict[str, ProjectionStatus] = {}
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._state: Literal["unopened", "open", "closed"] = "unopened"
        #: The newest log head this runner has read (for the lag gauge).
        self._head_seen = 0
        self._stop_reporting_lag: Callable[[], None] | None = None

    # -- lifecycle ----------------------------------------------------------------------
    async def open(self) -> ProjectionRunner:
        """Open the read-model file, create missing tables and reset every projection
        whose ``version`` changed (it is rebuilt from position 1 by the next catch-up)."""
        if self._state != "unopened":
            raise ProjectionError(f"this ProjectionRunner is {self._state}; create a new one")
        self._conn = await connect_views(self.path, "build" if self._building else "write")
        try:
            statuses, reset = await on_thread(self._conn, prepare, self.projections, True)
        except BaseException:
            await self._conn.close()
            raise
        self._keep(statuses)
        # Those starting from 0 fold without their plain indexes: catch_up builds them.
        self._indexes_deferred = any(s.position == 0 for s in self._statuses.values())
        for name, old in reset.items():
            if old is not None:  # readers see it empty until it has caught up again
                _log.warning(
                    "projection version changed: rebuilding it from position 1",
                    projection=name,
                    old_version=old,
                    views=str(self.path),
                )
        self._state = "open"
        self._stop_reporting_lag = register_projection_lag(self._lag)
        return self

    async def __aenter__(self) -> ProjectionRunner:
        return await self.open()

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop following and close the file. Safe to call twice."""
        if self._state == "closed":
            return
        try:
            with contextlib.suppress(Exception):
                await self.stop()
        finally:
            self._state = "closed"
            if self._stop_reporting_lag is not None:
                self._stop_reporting_lag()
            if self._conn is not None:
                await self._conn.close()
            async with self._changed:
                self._changed.notify_all()

    # -- running ------------------------------------------------------------------------
    async def catch_up(self, on_progress: Progress | None = None) -> int:
        """Apply everything up to the head as it is now; return the position reached.
        A page of the log SQLite cannot read raises :class:`~clawlog.events.StoreDamaged`
        (what was applied before it stays applied), unless ``skip_corrupt``.

        Reads and writes alternate: overlapping them is slower, because both are mostly
        Python work and SQLite releases the GIL for every row, so the threads convoy."""
        conn = self._check_open()
        target = await self.store.head_position()
        self._head_seen = max(self._head_seen, target)
        while self._healthy() and (lowest := self.position) < target:
            with _gc_paused(self._building):
                await self._apply(conn, await self._plan.read(lowest + 1, self.batch_size))
            if on_progress is not None:
                on_progress(min(self.position, target), target)
        await self.create_deferred_indexes()
        return self.position

    async def create_deferred_indexes(self) -> None:
        """Build the indexes left out while projections that started from position 0
        were folded (see :func:`_apply.prepare`); ``catch_up`` does it when it is done.
        Until then their readers' queries work, only slower. A no-op if none is due."""
        if self._indexes_deferred:
            await on_thread(self._check_open(), create_indexes, self.projections)
            self._indexes_deferred = False

    async def run(self) -> None:
        """Catch up, then follow the live log until cancelled or the store closes."""
        self._check_open()
        while self._healthy():
            await self.catch_up()
            if not self._healthy() or not await self._follow():
                return

    async def _follow(self) -> bool:
        """Apply live batches; True when a checkpoint moved back and a catch-up is due."""
        conn = self._check_open()
        start = self.position + 1
        async with self.store.subscribe(start, batch_size=self.batch_size) as events:
            while True:
                try:
                    got = await events.next_batch()
                except StopAsyncIteration:
                    return False  # the store was closed
                except CorruptEvent as exc:
                    # Catching up reads rows undecoded and fails only the projections
                    # that read this one (or skips it); then following resumes past it.
                    _log.error("corrupt row in the live log", position=exc.position)
                    return True
                except StoreDamaged:
                    if not self.skip_corrupt:
                        raise
                    return True  # catching up steps over the rows it cannot read
                through = max(got[-1].position, events.next_position - 1)
                self._head_seen = max(self._head_seen, events.head_seen, through)
                await self._apply(conn, self._plan.route_recorded(got, start, through))
                if not self._healthy():
                    return False
                if self.position < through:
                    return True
                start = through + 1

    def start(self) -> asyncio.Task[None]:
        """Run in a task of the current loop; ``stop()`` or ``aclose()`` ends it."""
        self._check_open()
        if self._task is not None and not self._task.done():
            raise ProjectionError("this runner is already running")
        self._task = asyncio.create_task(self.run(), name=f"clawlog-projections:{self.path.name}")
        self._task.add_done_callback(self._report_crash)
        return self._task

    def _report_crash(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            _log.error(
                "projection runner stopped", views=str(self.path), error=repr(task.exception())
            )

    async def stop(self) -> None:
        """Stop following; re-raise what ended the task if it failed."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _apply(self, conn: aiosqlite.Connection, batch: Batch) -> None:
        before = dict(self._statuses)
        statuses = await on_thread(conn, apply_batch, self.projections, batch)
        self._keep(statuses)
        for corrupt, readers in batch.skipped:
            self._note_skipped(corrupt, [self.projections[i].name for i in readers], before)
        for first, last in batch.damaged:
            if self._moved_past(first, [p.name for p in self.projections], before):
                self.damaged.append((first, last))
                _log.warning(
                    "stepped over rows the log cannot read",
                    first=first,
                    last=last,
                    views=str(self.path),
                )
        async with self._changed:
            self._changed.notify_all()

    def _note_skipped(
        self, corrupt: CorruptRow, names: list[str], before: dict[str, ProjectionStatus]
    ) -> None:
        """Count a corrupt row left out if a projection that reads it moved past it now."""
        position = corrupt.position
        passed = self._moved_past(position, names, before)
        if not passed or position in self._skipped:
            return
        self._skipped.add(position)
        self.skipped.append(position)
        _log.warning(
            "skipped a corrupt event",
            position=position,
            projections=passed,
            error=str(corrupt.error),
            views=str(self.path),
        )

    def _keep(self, statuses: dict[str, ProjectionStatus]) -> None:
        for projection in self.projections:
            status = statuses.get(projection.name) or ProjectionStatus(
                projection.name, projection.version, 0, "failed", "its checkpoint row is gone"
            )
            before = self._statuses.get(projection.name)
            if status.status == "failed" and (before is None or before.status != "failed"):
                _log.error(
                    "projection failed",
                    projection=status.name,
                    position=status.failed_at,
                    error=status.error,
                )
            self._statuses[projection.name] = status

    def _moved_past(
        self, position: int, names: list[str], before: dict[str, ProjectionStatus]
    ) -> list[str]:
        """Those of ``names`` whose checkpoint moved past ``position`` in the last batch."""
        return [
            name
            for name in names
            if name in before and before[name].position < position <= self._statuses[name].position
        ]

    # -- state ----------------------------------------------------------------------------
    @property
    def position(self) -> int:
        """The lowest checkpoint of the healthy projections (0 when none is healthy)."""
        return min((s.position for s in self._healthy()), default=0)

    def _lag(self) -> list[tuple[str, int]]:
        """Events behind the newest head seen, per projection (on the metric reader's thread:
        it only reads what the loop last stored)."""
        head = self._head_seen
        return [(s.name, max(0, head - s.position)) for s in list(self._statuses.values())]

    def statuses(self) -> list[ProjectionStatus]:
        """Every projection's checkpoint as of the last committed batch, by name."""
        return sorted(self._statuses.values(), key=lambda s: s.name)

    def _healthy(self) -> list[ProjectionStatus]:
        return [s for s in self._statuses.values() if s.status == "ok"]

    async def wait_until(
        self, position: int, timeout: float = 10.0, names: Sequence[str] | None = None
    ) -> None:
        """Return once the projections (all, or ``names``) have applied ``position``.

        Raises :class:`ProjectionFailed` if one of them failed before it, and
        :class:`NotCaughtUp` after ``timeout`` seconds."""
        wanted = list(names) if names is not None else [p.name for p in self.projections]
        unknown = set(wanted) - set(self._statuses)
        if unknown and self._state == "open":
            raise ProjectionError(f"this runner has no projection named {sorted(unknown)}")
        try:
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(lambda: self._reached(position, wanted))
        except TimeoutError as exc:
            raise NotCaughtUp(
                f"read models did not reach position {position} in {timeout} s (at {self.position})"
            ) from exc

    def _reached(self, position: int, names: Sequence[str]) -> bool:
        if self._state != "open":
            raise ReadModelsUnavailable(f"the runner for {self.path} is {self._state}")
        return all(_applied(self._statuses[name], position) for name in names)

    def _check_open(self) -> aiosqlite.Connection:
        if self._state != "open" or self._conn is None:
            raise ProjectionError(
                f"the runner for {self.path} is {self._state}: use `async with` or open()"
            )
        return self._conn


def _applied(status: ProjectionStatus, position: int) -> bool:
    """True if ``status`` covers ``position``; raise if it failed before reaching it."""
    if status.position >= position:
        return True
    if status.status == "failed":
        raise ProjectionFailed(status.name, status.failed_at or 0, status.error or "")
    return False


def _default_views(store: EventStore) -> Path:
    log_path = getattr(store.backend, "path", None)
    if log_path is None:
        raise ProjectionError("this store is not an SQLite file: give the read-model path")
    return views_path_for(log_path)


@contextlib.contextmanager
def _gc_paused(pause: bool) -> Iterator[None]:
    """Pause the cyclic garbage collector for one rebuild batch: a batch allocates some
    100k objects that all live until it is written, which the collector would otherwise
    walk again and again (15% of a rebuild). Reference counting still frees them."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
