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
from dataclasses import dataclass, field
from typing import Any

from msgspec.structs import astuple

from ..envelope import EventMetadata, NewRecord, StoredRecord
from ..errors import EventStoreError, IdempotencyKeyReused
from .base import SnapshotRecord, check_expected_version

__all__ = ["AppendRequest", "BatchWriter", "SnapshotRequest"]

_INSERT_EVENT = (
    "INSERT INTO events (position, stream, version, type, schema_version, payload, recorded_at,"
    " correlation_id, causation_id, actor, idempotency_key) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
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


@dataclass(eq=False)
class AppendRequest:
    stream: str
    records: Sequence[NewRecord]
    expected_version: int
    metadata: EventMetadata
    future: asyncio.Future[Any] | None = field(default=None)


@dataclass(eq=False)
class SnapshotRequest:
    snapshot: SnapshotRecord
    future: asyncio.Future[Any] | None = field(default=None)


Outcome = list[StoredRecord] | None | BaseException | tuple[str, int, int]


class BatchWriter:
    """Turns a batch of requests into one transaction. Owns the cached log head."""

    def __init__(self, max_batch: int) -> None:
        self.max_batch = max_batch
        self.head = 0
        self.versions: dict[str, int] = {}

    def load_head(self, conn: sqlite3.Connection) -> int:
        self.head = int(conn.execute("SELECT max(position) FROM events").fetchone()[0] or 0)
        return self.head

    def commit(
        self, conn: sqlite3.Connection, batch: Sequence[AppendRequest | SnapshotRequest]
    ) -> list[Outcome]:
        try:
            return self._commit_once(conn, batch)
        except sqlite3.IntegrityError:
            # Only another writer on the file can cause this (the lock file should stop
            # one); forget what we cached and decide each request in its own transaction.
            self.versions.clear()
            self.load_head(conn)
            return [self._commit_alone(conn, request) for request in batch]

    def _commit_alone(
        self, conn: sqlite3.Connection, request: AppendRequest | SnapshotRequest
    ) -> Outcome:
        try:
            return self._commit_once(conn, [request])[0]
        except sqlite3.IntegrityError as exc:
            self.versions.clear()
            self.load_head(conn)
            return EventStoreError(f"another process wrote this log concurrently: {exc}")

    def _commit_once(
        self, conn: sqlite3.Connection, batch: Sequence[AppendRequest | SnapshotRequest]
    ) -> list[Outcome]:
        now = time.time()
        head = self.head
        versions = dict[str, int]()
        keys: dict[str, tuple[str, int, int]] = {}
        rows: list[tuple[Any, ...]] = []
        key_rows: list[tuple[str, str, int, int]] = []
        snapshots: list[SnapshotRecord] = []
        outcomes: list[Outcome] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            for request in batch:
                if isinstance(request, SnapshotRequest):
                    snapshots.append(request.snapshot)
                    outcomes.append(None)
                    continue
                try:
                    outcome = self._decide(conn, request, head, now, versions, keys)
                except (EventStoreError, sqlite3.Error) as exc:
                    outcomes.append(exc)
                    continue
                if isinstance(outcome, tuple):  # a repeated idempotency key
                    outcomes.append(outcome)
                    continue
                outcomes.append([StoredRecord(*row) for row in outcome])
                rows.extend(outcome)
                head = outcome[-1][0]
                versions[request.stream] = outcome[-1][2]
                key = request.metadata.idempotency_key
                if key is not None:
                    span = (request.stream, outcome[0][0], outcome[-1][0])
                    keys[key] = span
                    key_rows.append((key, *span))
            conn.executemany(_INSERT_EVENT, rows)
            if key_rows:
                conn.executemany(_INSERT_KEY, key_rows)
            if snapshots:
                conn.executemany(_UPSERT_SNAPSHOT, [astuple(s) for s in snapshots])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self.head = head
        if len(self.versions) + len(versions) > _MAX_CACHED_STREAMS:
            self.versions.clear()
        self.versions.update(versions)
        return [
            self._resolve_repeat(conn, o, outcomes) if isinstance(o, tuple) else o for o in outcomes
        ]

    def _decide(
        self,
        conn: sqlite3.Connection,
        request: AppendRequest,
        head: int,
        now: float,
        versions: dict[str, int],
        keys: dict[str, tuple[str, int, int]],
    ) -> list[tuple[Any, ...]] | tuple[str, int, int]:
        stream, meta = request.stream, request.metadata
        if meta.idempotency_key is not None:
            span = keys.get(meta.idempotency_key) or _stored_key(conn, meta.idempotency_key)
            if span is not None:
                if span[0] != stream:
                    raise IdempotencyKeyReused(
                        f"idempotency key {meta.idempotency_key!r} was used for stream {span[0]!r}"
                    )
                return span
        current = versions.get(stream)
        if current is None:
            current = self._version_on_disk(conn, stream)
        check_expected_version(stream, request.expected_version, current)
        return [
            (
                head + i,
                stream,
                current + i,
                r.type,
                r.schema_version,
                r.payload,
                now,
                meta.correlation_id,
                meta.causation_id,
                meta.actor,
                meta.idempotency_key,
            )
            for i, r in enumerate(request.records, start=1)
        ]

    def _version_on_disk(self, conn: sqlite3.Connection, stream: str) -> int:
        cached = self.versions.get(stream)
        if cached is not None:
            return cached
        row = conn.execute("SELECT max(version) FROM events WHERE stream = ?", (stream,)).fetchone()
        return int(row[0] or 0)

    @staticmethod
    def _resolve_repeat(
        conn: sqlite3.Connection, span: tuple[str, int, int], outcomes: list[Any]
    ) -> list[StoredRecord]:
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


def _stored_key(conn: sqlite3.Connection, key: str) -> tuple[str, int, int] | None:
    row = conn.execute(
        "SELECT stream, first_position, last_position FROM idempotency_keys WHERE key = ?", (key,)
    ).fetchone()
    return (row[0], row[1], row[2]) if row else None
