"""Stream catalog: every stream with its kind, position range, event count and last event.

It reads only envelopes, so catch-ups and rebuilds never decode a payload for it. ``kind``
is the stream's first path segment (``session``, ``agent``, ``team``, ``link`` ...).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from operator import attrgetter
from typing import Any, ClassVar

import msgspec

from ..base import Envelope
from ..readers import Reader, check_page, where

__all__ = ["StreamCatalog", "StreamCatalogReader", "StreamInfo"]


class StreamInfo(msgspec.Struct, frozen=True):
    stream: str
    #: The first path segment of the stream name.
    kind: str
    first_position: int
    last_position: int
    event_count: int
    last_type: str
    #: The stream's version after its last event.
    last_version: int
    first_at: float
    last_at: float


_COLUMNS = ", ".join(StreamInfo.__struct_fields__)
_UPSERT = (
    f"INSERT INTO stream_catalog ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (stream) DO UPDATE SET last_position = excluded.last_position, "
    "event_count = stream_catalog.event_count + excluded.event_count, "
    "last_type = excluded.last_type, last_version = excluded.last_version, "
    "last_at = excluded.last_at"
)


class StreamCatalog:
    name: ClassVar[str] = "stream_catalog"
    version: ClassVar[int] = 1
    envelope_only: ClassVar[bool] = True
    table_names: ClassVar[tuple[str, ...]] = ("stream_catalog",)
    tables: ClassVar[tuple[str, ...]] = (
        """CREATE TABLE IF NOT EXISTS stream_catalog (
        stream TEXT PRIMARY KEY, kind TEXT NOT NULL, first_position INTEGER NOT NULL,
        last_position INTEGER NOT NULL, event_count INTEGER NOT NULL, last_type TEXT NOT NULL,
        last_version INTEGER NOT NULL, first_at REAL NOT NULL, last_at REAL NOT NULL
        ) WITHOUT ROWID""",
        "CREATE INDEX IF NOT EXISTS stream_catalog_kind ON stream_catalog (kind, stream)",
        "CREATE INDEX IF NOT EXISTS stream_catalog_recent ON stream_catalog (last_position)",
        "CREATE INDEX IF NOT EXISTS stream_catalog_kind_recent "
        "ON stream_catalog (kind, last_position)",
    )
    types: ClassVar[Sequence[str] | None] = None

    def handle(self, conn: sqlite3.Connection, event: Envelope) -> None:
        self.handle_batch(conn, [event])

    def handle_batch(self, conn: sqlite3.Connection, events: Sequence[Envelope]) -> None:
        """One upsert per stream per batch: the batch's events are counted in Python."""
        counts = Counter(map(_stream, events))
        first = {e.stream: e for e in reversed(events)}
        rows = [
            (
                s,
                s.partition("/")[0],
                first[s].position,
                e.position,
                counts[s],
                e.type,
                e.version,
                first[s].recorded_at,
                e.recorded_at,
            )
            for s, e in {e.stream: e for e in events}.items()
        ]
        conn.executemany(_UPSERT, rows)


_stream = attrgetter("stream")
_PAST_EVERY_POSITION = 2**63 - 1


class StreamCatalogReader(Reader):
    """Which streams exist, how busy they are, which moved last (for tail and history)."""

    projection: ClassVar[str] = "stream_catalog"

    async def streams(
        self,
        *,
        kind: str | None = None,
        prefix: str | None = None,
        after: str | None = None,
        limit: int = 100,
        since: float | None = None,
    ) -> list[StreamInfo]:
        """Streams by name; pass the last ``stream`` of a page as ``after`` (a listing by
        name pages by name). ``since``: whose last event was at or after it."""
        check_page(0, limit, since)
        clauses: list[str] = ["stream > ?"]
        params: list[Any] = [after or ""]
        if kind is not None:
            clauses.append("kind = ?")
            params.append(kind)
        if prefix is not None:
            clauses.append("substr(stream, 1, ?) = ?")
            params += [len(prefix), prefix]
        if since is not None:
            clauses.append("last_at >= ?")
            params.append(since)
        rows = await self.models.query(
            f"SELECT {_COLUMNS} FROM stream_catalog{where(clauses)} ORDER BY stream LIMIT ?",
            [*params, limit],
        )
        return [StreamInfo(*row) for row in rows]

    async def recent(
        self,
        *,
        kind: str | None = None,
        before: int | None = None,
        limit: int = 20,
        since: float | None = None,
    ) -> list[StreamInfo]:
        """Streams by their last event, newest first; page with ``before`` = the last
        row's ``last_position``. ``since``: only those whose last event was at or after
        it (the listing stops there)."""
        check_page(0, limit, since)
        # A range even for the first page (the index on last_position is read from its
        # end, never the table scanned).
        clauses: list[str] = ["last_position < ?"]
        params: list[Any] = [before if before is not None else _PAST_EVERY_POSITION]
        if kind is not None:
            clauses.append("kind = ?")
            params.append(kind)
        if since is not None:
            clauses.append("last_at >= ?")
            params.append(since)
        rows = await self.models.query(
            f"SELECT {_COLUMNS} FROM stream_catalog{where(clauses)} "
            "ORDER BY last_position DESC LIMIT ?",
            [*params, limit],
        )
        return [StreamInfo(*row) for row in rows]

    async def get(self, stream: str) -> StreamInfo | None:
        rows = await self.models.query(
            f"SELECT {_COLUMNS} FROM stream_catalog WHERE stream = ?", (stream,)
        )
        return StreamInfo(*rows[0]) if rows else None

    async def kinds(self) -> dict[str, tuple[int, int]]:
        """``{kind: (streams, events)}``."""
        rows = await self.models.query(
            "SELECT kind, count(*), sum(event_count) FROM stream_catalog GROUP BY kind "
            "ORDER BY kind"
        )
        return {kind: (streams, events) for kind, streams, events in rows}
