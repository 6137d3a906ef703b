"""The past for audits and debugging: timelines and state as of a position, read straight
from the log (no read model needed, so it works on any log, even a copy). Re-running a
recorded session through the agent loop ("what if", a replay) needs the actors: see
:func:`actors.replay.rerun`.

    query = TimelineQuery(correlation_id="turn-42", types=("tool.*",))
    async for recorded in timeline(store, query):
        ...
    board = await state_as_of(store, "team/t1", apply_board_event, BoardState(), position=900)

A corrupt event (or an unreadable page of an SQLite log) ends a timeline with
:class:`~clawlog.events.CorruptEvent` (:class:`~clawlog.events.StoreDamaged`) after the
good events before it. Pass a :class:`Skipped` as ``skip`` to step over them instead: it
collects what was skipped, for the caller to report.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import msgspec

from clawlog.events import CorruptEvent, EventStore, LogPages, RecordedEvent, StoreDamaged

__all__ = ["AsOf", "Skipped", "TimelineQuery", "read_timeline", "state_as_of", "timeline"]

S = TypeVar("S")
_PAGE = 1000


class TimelineQuery(msgspec.Struct, frozen=True, kw_only=True):
    """Which events a timeline shows. Every filter given must match; none given = all."""

    #: One stream (read through its index).
    stream: str | None = None
    #: Streams whose names start with this (``session/main/``).
    stream_prefix: str | None = None
    #: The user turn or job that caused the events.
    correlation_id: str | None = None
    #: The writer (``EventMetadata.actor``): this actor path or any path below it.
    actor: str | None = None
    #: Event tags; ``"tool.*"`` stands for every known tag of the ``tool`` domain.
    types: tuple[str, ...] | None = None
    #: Commit time bounds in epoch seconds; ``until`` is exclusive.
    since: float | None = None
    until: float | None = None

    def matches(self, recorded: RecordedEvent) -> bool:
        """The filters the store cannot apply in its query."""
        if self.correlation_id is not None and recorded.correlation_id != self.correlation_id:
            return False
        if self.actor is not None:
            actor = recorded.actor or ""
            if actor != self.actor and not actor.startswith(self.actor.rstrip("/") + "/"):
                return False
        if self.since is not None and recorded.recorded_at < self.since:
            return False
        return self.until is None or recorded.recorded_at < self.until


@dataclass(slots=True)
class Skipped:
    """What a read told to skip stepped over: the positions of corrupt events, and the
    ``(first, last)`` position ranges of unreadable pages, each in log order."""

    positions: list[int] = field(default_factory=list)
    damaged: list[tuple[int, int]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.positions or self.damaged)


async def timeline(
    store: EventStore,
    query: TimelineQuery | None = None,
    *,
    after: int = 0,
    up_to: int | None = None,
    limit: int | None = None,
    skip: Skipped | None = None,
) -> AsyncIterator[RecordedEvent]:
    """The matching events in log order, after position ``after`` (a page cursor) and up
    to position ``up_to``, at most ``limit`` of them. With ``skip``, corrupt events and
    unreadable pages are stepped over and recorded there (a stream's own read steps over
    corrupt events only)."""
    query = query or TimelineQuery()
    tags = _expand(store, query.types)
    if tags is not None and not tags:
        return
    wanted = set(tags) if tags is not None else None
    produced = 0
    scan = _scan(store, query, after, up_to, tags, skip)
    async with contextlib.aclosing(scan) as rows:
        async for recorded in rows:
            if up_to is not None and recorded.position > up_to:
                return
            if (wanted is None or recorded.type in wanted) and query.matches(recorded):
                yield recorded
                produced += 1
                if limit is not None and produced >= limit:
                    return


async def read_timeline(
    store: EventStore,
    query: TimelineQuery | None = None,
    *,
    after: int = 0,
    up_to: int | None = None,
    limit: int = 1000,
    skip: Skipped | None = None,
) -> list[RecordedEvent]:
    """One page of :func:`timeline`; the next page starts ``after`` its last position."""
    found = timeline(store, query, after=after, up_to=up_to, limit=limit, skip=skip)
    return [e async for e in found]


@dataclass(frozen=True, slots=True)
class AsOf(Generic[S]):
    """A folded state and where in the log it stands."""

    state: S
    #: Position of the last event folded in (0 if none).
    position: int
    #: Events folded in.
    events: int


async def state_as_of(
    store: EventStore,
    source: str | TimelineQuery,
    apply: Callable[[S, RecordedEvent], S],
    initial: S,
    *,
    position: int | None = None,
    skip: Skipped | None = None,
) -> AsOf[S]:
    """Fold ``apply`` over the events of a stream (or of a timeline query) up to and
    including ``position`` (the whole log when None); ``skip`` as for :func:`timeline`."""
    query = TimelineQuery(stream=source) if isinstance(source, str) else source
    state, last, count = initial, 0, 0
    async for recorded in timeline(store, query, up_to=position, skip=skip):
        state = apply(state, recorded)
        last, count = recorded.position, count + 1
    return AsOf(state=state, position=last, events=count)


async def _scan(
    store: EventStore,
    query: TimelineQuery,
    after: int,
    up_to: int | None,
    tags: list[str] | None,
    skip: Skipped | None,
) -> AsyncGenerator[RecordedEvent, None]:
    """Pages from the store: a stream through its own index, else the log in order with
    the prefix and types filtered in the store's query. A stream whose rows SQLite cannot
    all read is, when skipping, read on from the log in order instead (by its name as a
    prefix, then exactly), which steps over the unreadable rows."""
    prefix, exact = query.stream_prefix, None
    if query.stream is not None:
        if prefix is not None and not query.stream.startswith(prefix):
            return
        try:
            async for recorded in _stream_events(store, query.stream, skip):
                if recorded.position > after:
                    after = recorded.position
                    yield recorded
            return
        except StoreDamaged:
            if skip is None:
                raise
        prefix, exact = query.stream, query.stream
    pages = LogPages(
        store,
        after + 1,
        stop=up_to,
        stream_prefix=prefix,
        types=tags,
        page_size=_PAGE,
        skip_corrupt=skip is not None,
    )
    try:
        async for page in pages:
            for recorded in page:
                if exact is None or recorded.stream == exact:
                    yield recorded
    finally:
        if skip is not None:
            known = set(skip.positions)  # a stream's read may have skipped one already
            skip.positions.extend(p for p in pages.skipped if p not in known)
            skip.damaged.extend(pages.damaged)


async def _stream_events(
    store: EventStore, stream: str, skip: Skipped | None
) -> AsyncGenerator[RecordedEvent, None]:
    """A stream's events in version order. A corrupt one raises after the good events
    before it, or (``skip``) is recorded and stepped over: versions are gapless, so the
    bad row's version is the first one the failed read did not return."""
    version = 1
    while True:
        try:
            page = await store.read_stream(stream, version, _PAGE)
        except CorruptEvent as exc:
            for recorded in exc.events:
                yield recorded
            if skip is None:
                raise
            skip.positions.append(exc.position)
            version += len(exc.events) + 1
            continue
        if not page:
            return
        for recorded in page:
            yield recorded
        version = page[-1].version + 1


def _expand(store: EventStore, types: tuple[str, ...] | None) -> list[str] | None:
    return None if types is None else store.registry.expand(types)
