"""Walking the log page by page in bounded memory, through damage when asked to.

:class:`LogPages` is the one way a reader goes through the log (or a range of it) without
holding it: each page is one ``read_all`` of at most ``page_size`` events, handed over
before the next is read.

Without ``skip_corrupt`` a bad row ends the walk with a typed, positioned error, after
every good event before it was handed over: :class:`CorruptEvent` for a payload that does
not decode, :class:`StoreDamaged` for rows SQLite cannot read at all (a damaged page).

With ``skip_corrupt`` the walk goes on. A corrupt payload is skipped (its position goes
to ``skipped``). A damaged stretch is stepped over: from the position where the read
failed, the walk reads the backend directly, undecoded and unfiltered, a page at a time
and one row at a time where a page fails, so every readable row is still read and the
unreadable ones are recorded as ``(first, last)`` ranges in ``damaged``; after the first
row that reads again, plain pages resume. Rows are only known to exist up to the log's
head, so stepping ends there: for SQLite the head is ``max(position)`` of the table, or,
when the table's last page is the damaged one, the largest position in the ``(stream,
version)`` index (see ``SqliteBackend.head_position_from_disk``). A head that cannot be
read at all leaves no way round: that :class:`StoreDamaged` is raised.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from .envelope import RecordedEvent, StoredRecord
from .errors import CorruptEvent, StoreDamaged
from .logging import get_logger
from .store import EventStore, decode_row

__all__ = ["LogPages"]

_log = get_logger(__name__)


class LogPages:
    """The events from ``start`` to ``stop`` (inclusive; None: the head), as pages.

    ``async for page in LogPages(store, 1, types=["team.created"]): ...`` yields
    non-empty lists of :class:`RecordedEvent` in position order, each of at most
    ``page_size`` events. ``stream_prefix`` and ``types`` filter as in
    :meth:`EventStore.read_all`. ``skipped`` and ``damaged`` describe the latest walk
    (``skip_corrupt`` only): the positions of the corrupt rows skipped, and the
    ``(first, last)`` position ranges of the unreadable rows stepped over, in order.
    """

    def __init__(
        self,
        store: EventStore,
        start: int = 1,
        *,
        stop: int | None = None,
        stream_prefix: str | None = None,
        types: Sequence[str] | None = None,
        page_size: int = 1000,
        skip_corrupt: bool = False,
    ) -> None:
        if type(start) is not int or start < 1:
            raise ValueError(f"start must be a position (an int >= 1), not {start!r}")
        if stop is not None and (type(stop) is not int or stop < 0):
            raise ValueError(f"stop must be a position (an int >= 0) or None, not {stop!r}")
        if type(page_size) is not int or page_size < 1:
            raise ValueError(f"page_size must be an int >= 1, not {page_size!r}")
        if isinstance(types, str):
            raise ValueError("types must be a list of tags, not one string")
        self._store = store
        self._start = start
        self._stop = stop
        self._prefix = stream_prefix
        self._types = None if types is None else list(types)
        self._wanted = None if types is None else frozenset(types)
        self._page_size = page_size
        self._skip_corrupt = skip_corrupt
        self.skipped: list[int] = []
        self.damaged: list[tuple[int, int]] = []
        self._resume_at: int | None = None

    def __aiter__(self) -> AsyncIterator[list[RecordedEvent]]:
        return self._walk()

    async def _walk(self) -> AsyncIterator[list[RecordedEvent]]:
        self.skipped, self.damaged = [], []
        position: int | None = self._start
        while position is not None and self._within(position):
            limit = self._limit(position)
            failed: CorruptEvent | StoreDamaged | None = None
            try:
                page = await self._store.read_all(
                    position, limit, stream_prefix=self._prefix, types=self._types
                )
            except (CorruptEvent, StoreDamaged) as exc:
                failed = exc
            if isinstance(failed, CorruptEvent):
                good, position, failure = self._past_corrupt(failed)
                if good:
                    yield good
                if failure is not None:
                    raise failure
            elif failed is not None:
                async for good in self._around_damage(position, failed):
                    yield good
                position = self._resume_at
            else:
                kept = self._up_to_stop(page)
                if kept:
                    yield kept
                if len(kept) < limit or len(page) < limit:
                    return  # the end of the log, or of the range
                position = page[-1].position + 1

    # -- corrupt payloads -------------------------------------------------------------
    def _past_corrupt(
        self, exc: CorruptEvent
    ) -> tuple[list[RecordedEvent], int | None, CorruptEvent | None]:
        """The good events before a corrupt row, where the walk goes on (None: it ends)
        and the error to raise once they are handed over (None: skipped)."""
        good = self._up_to_stop(exc.events)
        if not self._within(exc.position):
            return good, None, None
        if not self._skip_corrupt:
            return good, None, exc
        self._note_skipped(exc)
        return good, exc.position + 1, None

    def _note_skipped(self, exc: CorruptEvent) -> None:
        _log.warning(
            "skipped a corrupt event",
            position=exc.position,
            stream=exc.stream,
            type=exc.type,
            reason=exc.reason,
        )
        self.skipped.append(exc.position)

    def _decode(self, rows: list[StoredRecord]) -> tuple[list[RecordedEvent], CorruptEvent | None]:
        """Decode the rows the walk wants, row by row (this is the slow path, for rows
        read around damage); a corrupt one is skipped, or ends the list and is returned."""
        events: list[RecordedEvent] = []
        for row in rows:
            if not self._matches(row):
                continue
            try:
                events.append(decode_row(self._store.registry, row))
            except CorruptEvent as exc:
                if not self._skip_corrupt:
                    exc.events = events
                    return events, exc
                self._note_skipped(exc)
        return events, None

    # -- damaged pages ----------------------------------------------------------------
    async def _around_damage(
        self, position: int, exc: StoreDamaged
    ) -> AsyncIterator[list[RecordedEvent]]:
        """After a read from ``position`` failed: read on from there through the backend
        (:meth:`_step_over`), handing over every readable row, and raise at the first
        unreadable one, or step over it with ``skip_corrupt``. A failure with no position
        (a table that is gone) has nothing to read around: it is raised as it is."""
        if exc.position is None:
            raise exc
        async for good in self._step_over(position):
            yield good

    async def _step_over(self, position: int) -> AsyncIterator[list[RecordedEvent]]:
        """Read on from ``position``, where a read failed, handing over every readable row
        up to the damage, then raise its :class:`StoreDamaged` (naming the exact row), or,
        with ``skip_corrupt``, step over the damaged rows; then set ``_resume_at`` (None:
        the walk ended, at the head or ``stop``).

        Reads the backend directly, undecoded and unfiltered (a filtered read cannot say
        whether the damage lies before ``stop``; an unfiltered one can): a page at a time
        while pages read, down to the rows before the position a failed read names, then
        one row at a time (a backend that names only where a read started still gets its
        readable rows read, one by one). A row that fails alone is unreadable. The first
        read that succeeds past an unreadable row ends the step.
        """
        backend = self._store.backend
        limit, stepped = self._page_size, False
        bound = await self._bound(None)
        while True:
            if position > bound:
                bound = await self._bound(bound)
                if position > bound:
                    self._resume_at = None
                    return
            try:
                rows = await backend.read_all(
                    position, min(limit, bound - position + 1), None, None
                )
            except StoreDamaged as exc:
                failed_at = exc.position or position
                if position < failed_at < position + limit:
                    limit = failed_at - position  # the rows before it read: take them
                elif limit > 1:
                    limit = 1  # is this very row unreadable?
                elif not self._skip_corrupt:
                    raise
                else:
                    self._note_damaged(position)
                    position, stepped = position + 1, True
                continue
            if not rows:
                self._resume_at = None
                return
            events, corrupt = self._decode(rows)
            if events:
                yield events
            if corrupt is not None:
                raise corrupt
            position, limit = rows[-1].position + 1, min(limit * 2, self._page_size)
            if stepped:
                self._resume_at = position
                return

    async def _bound(self, previous: int | None) -> int:
        """The last position stepping may try: ``stop`` or the head, whichever is lower.
        Once past it, the head is read again (a writer may have appended meanwhile)."""
        if previous is not None and self._stop is not None and previous >= self._stop:
            return previous
        head = await self._store.head_position()  # unreadable: StoreDamaged, no way round
        return head if self._stop is None else min(self._stop, head)

    def _note_damaged(self, position: int) -> None:
        if self.damaged and self.damaged[-1][1] == position - 1:
            self.damaged[-1] = (self.damaged[-1][0], position)
            return
        _log.warning("stepping over rows the log cannot read", first=position)
        self.damaged.append((position, position))

    # -- the range --------------------------------------------------------------------
    def _within(self, position: int) -> bool:
        return self._stop is None or position <= self._stop

    def _limit(self, position: int) -> int:
        """Unfiltered reads stop at ``stop``; filtered ones cannot say where their rows
        lie, so they read whole pages and :meth:`_up_to_stop` trims the last one."""
        if self._stop is None or self._prefix is not None or self._types is not None:
            return self._page_size
        return min(self._page_size, self._stop - position + 1)

    def _up_to_stop(self, events: list[RecordedEvent]) -> list[RecordedEvent]:
        if self._stop is None or not events or events[-1].position <= self._stop:
            return events
        return [e for e in events if e.position <= self._stop]

    def _matches(self, row: StoredRecord) -> bool:
        """The filters of ``read_all``, for rows read unfiltered around damage."""
        if self._prefix is not None and not row.stream.startswith(self._prefix):
            return False
        return self._wanted is None or row.type in self._wanted
