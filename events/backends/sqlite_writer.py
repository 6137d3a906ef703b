"""Group commit for the SQLite backend: one transaction for a batch of appends.

Everything here runs on the writer connection's thread, as one call per batch. Each
append is checked on its own (idempotency key, then expected version) against the stream
versions as the batch has left them, so one conflicting append gets its own
:class:`VersionConflict` and never fails the others in its transaction.

Each row gets its ``hash`` (:mod:`..chain`) in position order, linked to the row before
it; the transaction also records the new head in ``chain_head``. The running hash becomes
the writer's only when the transaction commits.

The hashing holds the GIL that the producers' loop needs, so it is kept short (BENCHMARKS.md,
"Hash chain"). Rows appended without metadata (the common case) are planned exactly as an
unchained writer plans them, then hashed in one call before the transaction begins
(:meth:`_Plan.seal`; an append with metadata seals the rows before it first, as it needs
the running hash). That call is the compiled ``events/_chain_seal.c`` (about 0.2 µs a
row), or where it could not be built :func:`seal_in_python` (about 0.9 µs): per row one
``struct`` call packs the previous hash and the fixed-size fields, everything after the
payload (the type and the envelope of a stream appended without metadata) is encoded once
per (stream, type) and reused, and SHA-256 hashes the three joined. Both hash exactly what
:func:`..chain.link` hashes. The hash is kept as a ``bytearray``: sqlite3 binds one without
the adaptation lookup it makes for every ``bytes`` parameter (about 0.2 µs a row).
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

import msgspec
from msgspec.structs import astuple

from ..chain import GENESIS, LINK_PREFIX, envelope_field, type_field
from ..envelope import NO_METADATA, EventMetadata, NewRecord, StoredRecord
from ..errors import EventStoreError, IdempotencyKeyReused, VersionConflict
from .base import ANY, SnapshotRecord
from .sqlite_chain import writer_head

#: ``seal(prev, rows, start) -> last hash``: the writer's hashing loop.
Sealer = Callable[[bytes | bytearray, list[tuple[Any, ...]], int], bytes | bytearray]
#: The loop compiled (setup.py), or None where it could not be built.
compiled_seal: Sealer | None
try:
    from .._chain_seal import seal as compiled_seal
except ImportError:  # pragma: no cover - a build without a C compiler or OpenSSL headers
    compiled_seal = None

__all__ = ["AppendRequest", "BatchWriter", "Outcome", "SnapshotRequest"]

_PLAIN_COLUMNS = "position, stream, version, type, schema_version, payload, recorded_at"
_FULL_COLUMNS = f"{_PLAIN_COLUMNS}, correlation_id, causation_id, actor, idempotency_key"


def _insert(columns: str, rows: int = 1) -> str:
    values = "(" + ",".join("?" * (columns.count(",") + 1)) + ")"
    return f"INSERT INTO events ({columns}) VALUES {','.join([values] * rows)}"


class _Statements(msgspec.Struct, frozen=True):
    """The inserts of one kind of writer: with the ``hash`` column (chained) or without."""

    plain: str
    full: str
    #: Multi-row forms of ``plain``, largest first.
    plain_chunks: tuple[tuple[int, str], ...]

    @classmethod
    def make(cls, chained: bool) -> _Statements:
        plain = _PLAIN_COLUMNS + (", hash" if chained else "")
        full = _FULL_COLUMNS + (", hash" if chained else "")
        chunks = tuple((size, _insert(plain, size)) for size in (64, 16, 4))
        return cls(_insert(plain), _insert(full), chunks)


_CHAINED = _Statements.make(chained=True)
_UNCHAINED = _Statements.make(chained=False)
_RECORD_HEAD = "UPDATE chain_head SET position = ?, hash = ? WHERE id = 1"
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
_sha256 = hashlib.sha256
_prefix = LINK_PREFIX.pack
_join = b"".join  # one copy of the payload (a concatenation makes one per +)


#: The writer's encoded suffixes (``stream -> type -> bytes``) are dropped past this
#: many streams and refilled on demand.
_MAX_SUFFIX_STREAMS = 8192
Suffixes = dict[str, dict[str, bytes]]


def _plain_suffix(cache: Suffixes, event_type: str, stream: str) -> bytes:
    """The hashed bytes after the payload of ``stream``'s events of ``event_type``
    appended without metadata (``type``, then the envelope's fields), now in ``cache``."""
    if len(cache) >= _MAX_SUFFIX_STREAMS:
        cache.clear()
    suffix = type_field(event_type) + envelope_field(stream, None, None, None, None)
    cache.setdefault(stream, {})[event_type] = suffix
    return suffix


def seal_in_python(
    prev: bytes | bytearray, rows: list[tuple[Any, ...]], start: int, suffixes: Suffixes
) -> bytes | bytearray:
    """What the compiled ``seal`` does, in Python (where it could not be built): hash the
    plain rows ``rows[start:]`` in place, each linked to the one before, and return the
    last hash."""
    hashed: list[tuple[Any, ...]] = []
    append = hashed.append
    for position, stream, version, event_type, schema_version, payload, now in rows[start:]:
        types = suffixes.get(stream)
        suffix = types.get(event_type) if types is not None else None
        if suffix is None:
            suffix = _plain_suffix(suffixes, event_type, stream)
        # chain.link, inlined: this is most of the chain's cost per event.
        fixed = _prefix(prev, position, version, schema_version, now, len(payload))
        prev = bytearray(_sha256(_join((fixed, payload, suffix))).digest())
        append((position, stream, version, event_type, schema_version, payload, now, prev))
    rows[start:] = hashed
    return prev


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

    def __init__(
        self, max_batch: int, *, chained: bool = True, seal: Sealer | None = compiled_seal
    ) -> None:
        self.max_batch = max_batch
        #: Hash each row into the chain (always, but for the benchmark of its cost).
        self.chained = chained
        #: The compiled hashing loop, or None for the Python one (where it was not built;
        #: tests/events runs both).
        self.seal = seal
        self.head = 0
        #: The hash of the event at ``head`` (what the next one links to).
        self.head_hash: bytes | bytearray = GENESIS
        self.versions: dict[str, int] = {}
        #: ``versions`` holds every stream of the log (it was empty when opened and the
        #: cache was never dropped): a stream not in it has no events yet.
        self.complete = False
        #: Events the last ``commit`` wrote, over all its transactions (a metric).
        self.committed = 0
        #: Encoded parts of the chain's encoding, reused from batch to batch.
        self.suffixes: Suffixes = {}

    def load_head(self, conn: sqlite3.Connection, path: str = "") -> int:
        if self.chained:
            self.head, self.head_hash = writer_head(conn, path)
        else:
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
        prev = self.head_hash if self.chained else None
        plan = _Plan(self.head, time.time(), prev, self.suffixes, self.seal)
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
        plan.seal()
        conn.execute("BEGIN IMMEDIATE")
        try:
            plan.write(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back already (disk full)
                conn.execute("ROLLBACK")
            raise
        self.head = plan.head
        if plan.prev is not None:
            self.head_hash = plan.prev
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
    four NULLs costs sqlite3 about as much as the rest of the row. ``prev`` is the running
    hash of the chain (None: an unchained writer); each row ends with its own. Plain rows
    are hashed by :meth:`seal` (the module's docstring); rows with metadata as they are
    planned.
    """

    __slots__ = (
        "full",
        "hashed",
        "head",
        "keys",
        "now",
        "plain",
        "prev",
        "repeats",
        "seal_rows",
        "snapshots",
        "suffixes",
        "versions",
    )

    def __init__(
        self,
        head: int,
        now: float,
        prev: bytes | bytearray | None,
        suffixes: Suffixes,
        seal: Sealer | None,
    ) -> None:
        self.head = head
        self.now = now
        self.prev = prev
        self.plain: list[tuple[Any, ...]] = []
        self.full: list[tuple[Any, ...]] = []
        self.versions: dict[str, int] = {}
        self.keys: dict[str, tuple[str, int, int]] = {}
        self.snapshots: list[SnapshotRecord] = []
        self.repeats = False
        #: The plain rows before this index carry their hash.
        self.hashed = 0
        self.suffixes = suffixes
        #: The compiled loop, or None: :func:`seal_in_python`.
        self.seal_rows = seal

    def add(
        self, stream: str, version: int, records: Sequence[NewRecord], meta: EventMetadata
    ) -> list[StoredRecord]:
        head, now = self.head, self.now
        if len(records) == 1 and meta is NO_METADATA:  # the common case, without loops
            record = records[0]
            self.head = head + 1
            self.versions[stream] = version + 1
            row = (
                head + 1, stream, version + 1, record.type, record.schema_version,
                record.payload, now,
            )  # fmt: skip
            self.plain.append(row)  # hashed by seal()
            return [StoredRecord(*row)]
        self.head += len(records)
        self.versions[stream] = version + len(records)
        plain = (
            meta.idempotency_key is None
            and meta.correlation_id is None
            and meta.causation_id is None
            and meta.actor is None
        )
        envelope = (meta.correlation_id, meta.causation_id, meta.actor, meta.idempotency_key)
        extra = () if plain else envelope
        rows: list[tuple[Any, ...]] = [
            (head + i, stream, version + i, r.type, r.schema_version, r.payload, now, *extra)
            for i, r in enumerate(records, 1)
        ]
        stored = [StoredRecord(*row) for row in rows]
        if plain:
            self.plain += rows  # hashed by seal()
        else:
            if self.prev is not None:
                if self.hashed < len(self.plain):
                    self.seal()  # the rows before these first
                rows = self._chain(rows, envelope_field(stream, *envelope))
            self.full += rows
        if meta.idempotency_key is not None:
            self.keys[meta.idempotency_key] = (stream, head + 1, self.head)
        return stored

    def seal(self) -> None:
        """Hash the plain rows planned since the last call, in one call."""
        if self.prev is None or self.hashed == len(self.plain):
            return
        if self.seal_rows is None:
            self.prev = seal_in_python(self.prev, self.plain, self.hashed, self.suffixes)
        else:
            self.prev = self.seal_rows(self.prev, self.plain, self.hashed)
        self.hashed = len(self.plain)

    def _chain(self, rows: list[tuple[Any, ...]], envelope: bytes) -> list[tuple[Any, ...]]:
        """``rows`` (of one append with metadata) with their hashes, linked from
        ``self.prev`` on."""
        prev = self.prev
        assert prev is not None
        if self.seal_rows is not None:
            self.prev = self.seal_rows(prev, rows, 0)
            return rows
        chained = []
        for row in rows:
            payload = row[5]
            fixed = _prefix(prev, row[0], row[2], row[4], row[6], len(payload))
            prev = bytearray(
                _sha256(_join((fixed, payload, type_field(row[3]), envelope))).digest()
            )
            chained.append((*row, prev))
        self.prev = prev
        return chained

    def write(self, conn: sqlite3.Connection) -> None:
        self.seal()  # done before BEGIN already (the lock is held only for the writes)
        statements = _UNCHAINED if self.prev is None else _CHAINED
        if self.plain:
            _insert_plain(conn, self.plain, statements)
        if self.full:
            conn.executemany(statements.full, self.full)
        if self.prev is not None and (self.plain or self.full):
            conn.execute(_RECORD_HEAD, (self.head, self.prev))
        if self.keys:
            conn.executemany(_INSERT_KEY, [(key, *span) for key, span in self.keys.items()])
        if self.snapshots:
            conn.executemany(_UPSERT_SNAPSHOT, [astuple(s) for s in self.snapshots])


def _insert_plain(
    conn: sqlite3.Connection, rows: list[tuple[Any, ...]], statements: _Statements
) -> None:
    """Insert rows many per statement: ``executemany`` steps (and drops the GIL) once per
    row; one ``INSERT ... VALUES (...), (...)`` of a fixed size (so sqlite3's statement
    cache keeps it) binds them all in one call, about 15% less per row."""
    start, count = 0, len(rows)
    for size, sql in statements.plain_chunks:
        while count - start >= size:
            conn.execute(sql, list(chain.from_iterable(rows[start : start + size])))
            start += size
    if start < count:
        conn.executemany(statements.plain, rows[start:])


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
