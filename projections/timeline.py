"""The past for audits and debugging: timelines and state as of a position, read straight
from the log (no read model needed, so it works on any log, even a copy). Re-running a
recorded session through the agent loop ("what if", a replay) needs the actors: see
:func:`actors.replay.rerun`.

    query = TimelineQuery(correlation_id="turn-42", types=("tool.*",))
    async for recorded in timeline(store, query):
        ...
    board = await state_as_of(store, "team/t1", apply_board_event, BoardState(), position=900)
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import msgspec

from clawlog.events import EventStore, RecordedEvent

__all__ = ["AsOf", "TimelineQuery", "read_timeline", "state_as_of", "timeline"]

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


async def timeline(
    store: EventStore,
    query: TimelineQuery | None = None,
    *,
    after: int = 0,
    up_to: int | None = None,
    limit: int | None = None,
) -> AsyncIterator[RecordedEvent]:
    """The matching events in log order, after position ``after`` (a page cursor) and up
    to position ``up_to``, at most ``limit`` of them."""
    query = query or TimelineQuery()
    tags = _expand(store, query.types)
    if tags is not None and not tags:
        return
    wanted = set(tags) if tags is not None else None
    produced = 0
    async with contextlib.aclosing(_scan(store, query, after, tags)) as rows:
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
) -> list[RecordedEvent]:
    """One page of :func:`timeline`; the next page starts ``after`` its last position."""
    return [e async for e in timeline(store, query, after=after, up_to=up_to, limit=limit)]


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
) -> AsOf[S]:
    """Fold ``apply`` over the events of a stream (or of a timeline query) up to and
    including ``position`` (the whole log when None)."""
    query = TimelineQuery(stream=source) if isinstance(source, str) else source
    state, last, count = initial, 0, 0
    async for recorded in timeline(store, query, up_to=position):
        state = apply(state, recorded)
        last, count = recorded.position, count + 1
    return AsOf(state=state, position=last, events=count)


async def _scan(
    store: EventStore, query: TimelineQuery, after: int, tags: list[str] | None
) -> AsyncGenerator[RecordedEvent, None]:
    """Pages from the store: a stream through its own index, else the log in order with
    the prefix and types filtered in the store's query."""
    if query.stream is not None:
        if query.stream_prefix is not None and not query.stream.startswith(query.stream_prefix):
            return
        version = 1
        while page := await store.read_stream(query.stream, version, _PAGE):
            for recorded in page:
                if recorded.position > after:
                    yield recorded
            version = page[-1].version + 1
        return
    position = after + 1
    while page := await store.read_all(
        position, _PAGE, stream_prefix=query.stream_prefix, types=tags
    ):
        for recorded in page:
            yield recorded
        position = page[-1].position + 1


def _expand(store: EventStore, types: tuple[str, ...] | None) -> list[str] | None:
    if types is None:
        return None
    known = store.registry.tags()
    tags: set[str] = set()
    for tag in types:
        if tag.endswith(".*"):
            tags.update(t for t in known if t.startswith(tag[:-1]))
        else:
            tags.add(tag)
    return sorted(tags)
