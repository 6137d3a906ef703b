"""Group commit for the SQLite backend: one transaction for a batch of appends.

Everything here runs on the writer connection's thread, as one call per batch. Each
append is checked on its own (idempotency key, then expected version) against the stream
versions as the batch has left them, so one conflicting append gets its own
:class:`VersionConflict` and never fails the others in its transaction.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Sequence
from itertools import chain
from typing import Any

import msgspec
from msgspec.structs import astuple

from ..envelope import NO_METADATA, EventMetadata, NewRecord, StoredRecord
from ..errors import EventStoreError, IdempotencyKeyReused, VersionConflict
from .base import ANY, SnapshotRecord

__all__ = ["AppendRequest", "BatchWriter", "Outcome", "SnapshotRequest"]

_INSERT_PLAIN = (
    "INSERT INTO events (position, stream, version, type, schema_version, payload, recorded_at)"
    " VALUES (?,?,?,?,?,?,?)"
)
_INSERT_FULL = (
    "INSERT INTO events (position, stream, version, type, schema_version, payload, recorded_at,"
    " correlation_id, causation_id, actor, idempotency_key) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
)
#: Multi-row forms of ``_INSERT_PLAIN``, largest first (7 parameters a row).
_PLAIN_CHUNKS = tuple(
    (
        size,
        _INSERT_PLAIN.replace(
            " VALUES (?,?,?,?,?,?,?)", " VALUES " + ",".join(["(?,?,?,?,?,?,?)"] * size)
        ),
    )
    for size in (64, 16, 4)
)
_INSERT_KEY = (
    "INSERT INTO idempotency_keys (key, stream, first_position, last_position) VALUES (?,?,?,?)"
)
_UPSERT_SNAPSHOT = (
    "INSERT INTO snapshots (stream, version, state_type, payload, recorded_at) "
    "VALUES (?,?,?,?,?) ON CONFLICT (stream) DO UPDATE SET version = excluded.version, "
    "state_type = excluded.state_type, payload = excluded.payload, "
    "recorded_at = excluded.recorded_at WHERE excluded.version >= snapshots.version"
)
#: Stream versions kept in memory; beyond this the cache is dropped and refilled on demand.
_MAX_CACHED_STREAMS = 200_000


class AppendRequest(msgspec.Struct):
    """One queued append (a Struct: built in C, it costs the hot path less than a
    dataclass)."""

    stream: str
    records: Sequence[NewRecord]
    expected_version: int
    metadata: EventMetadata
    future: asyncio.Future[Any]


class SnapshotRequest(msgspec.Struct):
    snapshot: SnapshotRecord
    future: asyncio.Future[Any]


Outcome = list[StoredRecord] | None | BaseException | tuple[str, int, int]


class BatchWriter:
    """Turns a batch of requests into one transaction. Owns the cached log head."""

    def __init__(self, max_batch: int) -> None:
        self.max_batch = max_batch
        self.head = 0
        self.versions: dict[str, int] = {}
        #: ``versions`` holds every stream of the log (it was empty when opened and the
        #: cache was never dropped): a stream not in it has no events yet.
        self.complete = False
        #: Events the last ``commit`` wrote, over all its transactions (a metric).
        self.committed = 0

    def load_head(self, conn: sqlite3.Connection) -> int:
        self.head = int(conn.execute("SELECT max(position) FROM events").fetchone()[0] or 0)
        self.complete = self.head == 0 and not self.versions
        return self.head

    def forget_versions(self) -> None:
        self.versions.clear()
        self.complete = False

    def commit(
        self, conn: sqlite3.Connection, batch: Sequence[AppendRequest | SnapshotRequest]
    ) -> list[Outcome]:
        self.committed = 0
        try:
            return self._commit_once(conn, batch)
        except sqlite3.IntegrityError:
            # Only another writer on the file can cause this (the lock file should stop
            # one); forget what we cached and decide each request in its own transaction.
            self.forget_versions()
            self.load_head(conn)
            return [self._commit_alone(conn, request) for request in batch]

    def _commit_alone(
        self, conn: sqlite3.Connection, request: AppendRequest | SnapshotRequest
    ) -> Outcome:
        try:
            return self._commit_once(conn, [request])[0]
        except sqlite3.IntegrityError as exc:
            self.forget_versions()
            self.load_head(conn)
            return EventStoreError(f"another process wrote this log concurrently: {exc}")

    def _commit_once(
        self, conn: sqlite3.Connection, batch: Sequence[AppendRequest | SnapshotRequest]
    ) -> list[Outcome]:
        # Deciding only reads what this thread committed (one writer per file), so it
        # happens before BEGIN and the write lock is held just for the inserts.
        plan = _Plan(self.head, time.time())
        planned, cached = plan.versions, self.versions
        outcomes: list[Outcome] = []
        for request in batch:
            # The common case inline: an append without an idempotency key to a stream
            # whose version is known (every call here costs the whole batch's callers).
            if type(request) is AppendRequest and request.metadata.idempotency_key is None:
                stream = request.stream
                current = planned.get(stream)
                if current is None:
                    current = cached.get(stream)
                    if current is None and self.complete:
                        current = 0
                if current is not None:
                    expected = request.expected_version
                    if expected != ANY and expected != current:
                        outcomes.append(VersionConflict(stream, expected, current))
                    else:
                        records, meta = request.records, request.metadata
                        outcomes.append(plan.add(stream, current, records, meta))
                    continue
            outcomes.append(self._decide(conn, request, plan))
        conn.execute("BEGIN IMMEDIATE")
        try:
            plan.write(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back already (disk full)
                conn.execute("ROLLBACK")
            raise
        self.head = plan.head
        self.committed += len(plan.plain) + len(plan.full)
        if len(cached) + len(planned) > _MAX_CACHED_STREAMS:
            self.forget_versions()
        cached.update(planned)
        if not plan.repeats:
            return outcomes
        return [_resolve_repeat(conn, o, outcomes) if type(o) is tuple else o for o in outcomes]

    def _decide(
        self, conn: sqlite3.Connection, request: AppendRequest | SnapshotRequest, plan: _Plan
    ) -> Outcome:
        """Check one request against the log as the batch has left it; plan its rows.

        Returns its records, its error, or (for a repeated idempotency key) the span
        first written under that key.
        """
        if type(request) is SnapshotRequest:
            plan.snapshots.append(request.snapshot)
            return None
        assert type(request) is AppendRequest
        stream, key = request.stream, request.metadata.idempotency_key
        try:
            if key is not None:
                span = plan.keys.get(key) or _stored_key(conn, key)
                if span is not None:
                    if span[0] != stream:
                        raise IdempotencyKeyReused(
                            f"idempotency key {key!r} was used for stream {span[0]!r}"
                        )
                    plan.repeats = True
                    return span
            current = plan.versions.get(stream)
            if current is None:
                current = self.versions.get(stream)
                if current is None:
                    current = 0 if self.complete else _version_on_disk(conn, stream)
        except (EventStoreError, sqlite3.Error) as exc:
            return exc
        expected = request.expected_version
        if expected != ANY and expected != current:
            return VersionConflict(stream, expected, current)
        return plan.add(stream, current, request.records, request.metadata)


class _Plan:
    """What one transaction writes, and the records handed back for it.

    Rows without metadata go through a statement that leaves those columns out: binding
    four NULLs costs sqlite3 about as much as the rest of the row.
    """

    __slots__ = ("full", "head", "keys", "now", "plain", "repeats", "snapshots", "versions")

    def __init__(self, head: int, now: float) -> None:
        self.head = head
        self.now = now
        self.plain: list[tuple[Any, ...]] = []
        self.full: list[tuple[Any, ...]] = []
        self.versions: dict[str, int] = {}
        self.keys: dict[str, tuple[str, int, int]] = {}
        self.snapshots: list[SnapshotRecord] = []
        self.repeats = False

    def add(
        self, stream: str, version: int, records: Sequence[NewRecord], meta: EventMetadata
    ) -> list[StoredRecord]:
        head, now = self.head, self.now
        if len(records) == 1 and meta is NO_METADATA:  # the common case, without loops
            record = records[0]
            self.head = head + 1
            self.versions[stream] = version + 1
            row = (head + 1, stream, version + 1, record.type, record.schema_version,
                   record.payload, now)  # fmt: skip
            self.plain.append(row)
            return [StoredRecord(*row)]
        self.head += len(records)
        self.versions[stream] = version + len(records)
        if (
            meta.idempotency_key is None
            and meta.correlation_id is None
            and meta.causation_id is None
            and meta.actor is None
        ):
            rows: list[tuple[Any, ...]] = [
                (head + i, stream, version + i, r.type, r.schema_version, r.payload, now)
                for i, r in enumerate(records, 1)
            ]
            self.plain += rows
            return [StoredRecord(*row) for row in rows]
        extra = (meta.correlation_id, meta.causation_id, meta.actor, meta.idempotency_key)
        rows = [
            (head + i, stream, version + i, r.type, r.schema_version, r.payload, now, *extra)
            for i, r in enumerate(records, 1)
        ]
        self.full += rows
        if meta.idempotency_key is not None:
            self.keys[meta.idempotency_key] = (stream, head + 1, self.head)
        return [StoredRecord(*row) for row in rows]

    def write(self, conn: sqlite3.Connection) -> None:
        if self.plain:
            _insert_plain(conn, self.plain)
        if self.full:
            conn.executemany(_INSERT_FULL, self.full)
        if self.keys:
            conn.executemany(_INSERT_KEY, [(key, *span) for key, span in self.keys.items()])
        if self.snapshots:
            conn.executemany(_UPSERT_SNAPSHOT, [astuple(s) for s in self.snapshots])


def _insert_plain(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Insert rows many per statement: ``executemany`` steps (and drops the GIL) once per
    row; one ``INSERT ... VALUES (...), (...)`` of a fixed size (so sqlite3's statement
    cache keeps it) binds them all in one call, about 15% less per row."""
    start, count = 0, len(rows)
    for size, sql in _PLAIN_CHUNKS:
        while count - start >= size:
            conn.execute(sql, list(chain.from_iterable(rows[start : start + size])))
            start += size
    if start < count:
        conn.executemany(_INSERT_PLAIN, rows[start:])


def _version_on_disk(conn: sqlite3.Connection, stream: str) -> int:
    row = conn.execute("SELECT max(version) FROM events WHERE stream = ?", (stream,)).fetchone()
    return int(row[0] or 0)


def _stored_key(conn: sqlite3.Connection, key: str) -> tuple[str, int, int] | None:
    row = conn.execute(
        "SELECT stream, first_position, last_position FROM idempotency_keys WHERE key = ?", (key,)
    ).fetchone()
    return (row[0], row[1], row[2]) if row else None


def _resolve_repeat(
    conn: sqlite3.Connection, span: tuple[str, int, int], outcomes: list[Outcome]
) -> list[StoredRecord]:
    """The records first written under a repeated idempotency key."""
    _, first, last = span
    for outcome in outcomes:  # first used in this very batch
        if isinstance(outcome, list) and outcome and outcome[0].position == first:
            return outcome
    cursor = conn.execute(
        "SELECT position, stream, version, type, schema_version, payload, recorded_at, "
        "correlation_id, causation_id, actor, idempotency_key FROM events "
        "WHERE position BETWEEN ? AND ? ORDER BY position",
        (first, last),
    )
    return [StoredRecord(*row) for row in cursor]
