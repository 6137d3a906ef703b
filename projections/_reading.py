"""How the runner reads the log: one query per batch, filtered by type in SQL, payloads
decoded only for the projections that read them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from clawlog.events import (
    CorruptEvent,
    EventRegistry,
    EventStore,
    LogPages,
    RecordedEvent,
    StoreDamaged,
)
from clawlog.events.envelope import StoredRecord
from clawlog.events.store import DECODE_ERRORS, decode_row, recorded_from_row

from ._apply import Batch, CorruptRow
from .base import Projection

__all__ = ["ReadPlan"]

#: (projections given the decoded event, projections given the row as it is)
_Route = tuple[tuple[int, ...], tuple[int, ...]]
_Appends = tuple[tuple[Callable[[Any], None], ...], tuple[Callable[[Any], None], ...]]


class ReadPlan:
    """Which events each projection gets, and the cheapest read that yields them."""

    def __init__(
        self, store: EventStore, projections: Sequence[Projection], skip_corrupt: bool = False
    ) -> None:
        self._store = store
        #: Leave rows that cannot be decoded out (noted in the batch) instead of routing
        #: a :class:`CorruptRow` that fails the projections reading it.
        self._skip_corrupt = skip_corrupt
        self._wanted = [None if p.types is None else frozenset(p.types) for p in projections]
        self._envelope_only = [bool(getattr(p, "envelope_only", False)) for p in projections]
        #: Envelope-only projections of every type get the batch's rows as they are.
        self._every_envelope = [
            i for i, w in enumerate(self._wanted) if w is None and self._envelope_only[i]
        ]
        self._routes: dict[str, _Route] = {}
        self.types = _union(self._wanted)

    async def read(self, start: int, limit: int) -> Batch:
        """Read up to ``limit`` relevant rows from ``start``; the batch covers everything
        up to the head when fewer came back (irrelevant events were skipped in SQL).

        A damaged page raises :class:`StoreDamaged`, unless corrupt rows are skipped:
        then the batch is read around it (:meth:`read_around_damage`)."""
        try:
            head, rows = await self.read_rows(start, limit)
        except StoreDamaged as exc:
            if not self._skip_corrupt or exc.position is None:
                raise  # not asked to, or nothing to read around (a table is gone)
            return await self.read_around_damage(start, limit)
        return self.route_rows(rows, start, head, limit)

    async def read_around_damage(self, start: int, limit: int) -> Batch:
        """The next ``limit`` positions from ``start`` (up to the head), read with
        :class:`LogPages`, which steps over the rows SQLite cannot read and skips corrupt
        payloads: the slow path (every row decoded through the store, and nothing the
        envelope-only projections get of a row it skips), taken only for a batch whose
        plain read failed; the next batch reads plainly again."""
        through = min(start + limit - 1, await self._store.backend.head_position())
        pages = LogPages(
            self._store, start, stop=through, types=self.types, page_size=limit, skip_corrupt=True
        )
        events = [event async for page in pages for event in page]
        batch = self.route_recorded(events, start, max(through, start - 1))
        readers = tuple(range(len(self._wanted)))
        batch.skipped = [
            (CorruptRow(position, ValueError("its payload cannot be decoded")), readers)
            for position in pages.skipped
        ]
        batch.damaged = list(pages.damaged)
        return batch

    async def read_rows(self, start: int, limit: int) -> tuple[int, list[StoredRecord]]:
        """The head, then up to ``limit`` undecoded rows from ``start``."""
        backend = self._store.backend
        head = await backend.head_position()
        if self.types is not None and not self.types:
            return head, []  # nothing any projection reads
        return head, await backend.read_all(start, limit, None, self.types)

    def route_rows(self, rows: list[StoredRecord], start: int, head: int, limit: int) -> Batch:
        """Route undecoded rows, decoding those some projection reads decoded."""
        last = rows[-1].position if rows else start - 1
        through = last if len(rows) == limit else max(head, last, start - 1)
        routed = self._lists(rows)
        registry = self._store.registry
        classes, decode = registry.current_decoding()
        appends: dict[str, _Appends] = {}
        clean = True
        skipped: list[tuple[CorruptRow, tuple[int, ...]]] = []
        for row in rows:
            targets = appends.get(row.type)
            if targets is None:
                targets = appends[row.type] = self._appends_for(row.type, routed)
            for append in targets[1]:
                append(row)
            if not targets[0]:
                continue
            # What EventStore.read_all does per row, inlined (calls per row through the
            # registry were a third of a rebuild's decoding): the union decoder for a row
            # of a current class, the registry for anything else (an older schema
            # version, an unknown tag, a payload that does not match its tag).
            cls = classes.get(row.type)
            try:
                current = cls is not None and row.schema_version >= cls.schema_version
                event = decode(row.payload) if current else None
            except DECODE_ERRORS:
                event = None  # the registry below says how it is corrupt
            if cls is not None and type(event) is cls:
                recorded: RecordedEvent | CorruptRow = recorded_from_row(row, event)
            else:
                recorded = _decode_or_mark(registry, row)
                if type(recorded) is CorruptRow:
                    if self._skip_corrupt:
                        skipped.append((recorded, self._routes[row.type][0]))
                        continue
                    clean = False
            for append in targets[0]:
                append(recorded)
        return Batch(start=start, through=through, routed=routed, clean=clean, skipped=skipped)

    def route_recorded(self, events: list[RecordedEvent], start: int, through: int) -> Batch:
        """A batch of already decoded events (from a live subscription)."""
        routed = self._lists(events)
        appends: dict[str, _Appends] = {}
        for recorded in events:
            targets = appends.get(recorded.type)
            if targets is None:
                targets = appends[recorded.type] = self._appends_for(recorded.type, routed)
            for append in targets[0]:
                append(recorded)
            for append in targets[1]:
                append(recorded)
        return Batch(start=start, through=through, routed=routed, clean=True)

    def _lists(self, rows: Sequence[Any]) -> list[list[Any]]:
        routed: list[list[Any]] = [[] for _ in self._wanted]
        for index in self._every_envelope:
            routed[index] = list(rows)  # every row, as it is: nothing to sort out
        return routed

    def _appends_for(self, tag: str, routed: list[list[Any]]) -> _Appends:
        """The appends of the lists the decoded event of ``tag`` goes to, then its row's."""
        payload, envelope = self._routes.get(tag) or self._route_for(tag)
        return tuple(routed[i].append for i in payload), tuple(routed[i].append for i in envelope)

    def _route_for(self, tag: str) -> _Route:
        """Which projections get the decoded event, and which the row, of this tag."""
        matching = [i for i, w in enumerate(self._wanted) if w is None or tag in w]
        payload = tuple(i for i in matching if not self._envelope_only[i])
        envelope = tuple(
            i for i in matching if self._envelope_only[i] and i not in self._every_envelope
        )
        self._routes[tag] = (payload, envelope)
        return payload, envelope


def _union(wanted: list[frozenset[str] | None]) -> list[str] | None:
    tags: set[str] = set()
    for kinds in wanted:
        if kinds is None:
            return None
        tags |= kinds
    return sorted(tags)


def _decode_or_mark(registry: EventRegistry, row: StoredRecord) -> RecordedEvent | CorruptRow:
    try:
        return decode_row(registry, row)
    except CorruptEvent as exc:
        return CorruptRow(row.position, exc)
