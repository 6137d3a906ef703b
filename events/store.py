"""The typed event store: validates, encodes and decodes; a backend keeps the bytes."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, TypeVar, cast

import msgspec

from .backends.base import (
    ANY,
    NO_STREAM,
    LeaseBackend,
    LeaseToken,
    SnapshotRecord,
    StorageBackend,
)
from .base import Event, event_tag
from .envelope import NO_METADATA, EventMetadata, NewRecord, RecordedEvent, StoredRecord
from .errors import CorruptEvent, InvalidAppend, InvalidEvent, PayloadTooLarge, StoreClosed
from .logging import get_logger
from .registry import EventRegistry
from .subscription import Subscription
from .telemetry import METRIC_BACKEND, instruments, metrics_enabled

__all__ = [
    "ANY",
    "DECODE_ERRORS",
    "DEFAULT_MAX_PAYLOAD_BYTES",
    "NO_STREAM",
    "EventStore",
    "Snapshot",
    "decode_row",
    "recorded_from_row",
    "validate_stream",
]

S = TypeVar("S")
DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024
_MAX_EVENTS_PER_APPEND = 10_000
_MAX_REMEMBERED_STREAMS = 100_000
#: What decoding a stored payload raises when it does not match its tag.
DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, TypeError, ValueError)
#: What encoding an event raises for a value msgpack cannot hold (an object, a huge int).
_ENCODE_ERRORS = (msgspec.EncodeError, TypeError, ValueError, OverflowError)
#: Where msgspec's validation message names the field: "... - at `$.user`".
_FIELD_IN_REASON = re.compile(r"`\$\.([A-Za-z_][A-Za-z0-9_]*)")
_STREAM_NAME = re.compile(r"[A-Za-z0-9_.:@+=#~,>-]+(?:/[A-Za-z0-9_.:@+=#~,>-]+)*")
_log = get_logger(__name__)


class Snapshot(msgspec.Struct, frozen=True, kw_only=True):
    """A decoded snapshot: the state of ``stream`` after ``version``."""

    stream: str
    version: int
    state: Any
    recorded_at: float


def validate_stream(stream: object) -> str:
    """Return ``stream`` if it is a valid stream name, else raise :class:`InvalidAppend`.

    Valid: 1-256 characters of ``A-Z a-z 0-9 _ . : @ + = # ~ , > -`` in ``/``-separated
    segments (``session/main/u1``, ``link/a->b``). No spaces, control characters, empty
    segments, wildcards or quotes.
    """
    if not isinstance(stream, str):
        raise InvalidAppend(f"a stream name must be a string, not {type(stream).__name__}")
    if not 0 < len(stream) <= 256 or _STREAM_NAME.fullmatch(stream) is None:
        raise InvalidAppend(
            f"invalid stream name {stream!r}: use 1-256 characters from A-Z a-z 0-9 _.:@+=#~,>- "
            "in '/'-separated segments, with no empty segment"
        )
    return stream


class EventStore:
    """The event log as the rest of clawlog sees it. Bound to the asyncio loop that opened it.

    ``append`` takes ``expected_version``: an exact version (``NO_STREAM`` = 0 for a new
    stream) or ``ANY``. Positions are global and gapless; versions count per stream from 1.
    """

    def __init__(
        self,
        backend: StorageBackend,
        registry: EventRegistry,
        *,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    ) -> None:
        self.backend = backend
        self.registry = registry
        self.max_payload_bytes = max_payload_bytes
        self._closed = False
        self._snapshot_encoder = msgspec.msgpack.Encoder()
        self._valid_streams: set[str] = set()
        self._metric_attributes = {METRIC_BACKEND: _backend_name(backend)}
        #: Only a backend several processes write fences appends (PostgreSQL).
        self._fences = isinstance(backend, LeaseBackend)

    async def __aenter__(self) -> EventStore:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Flush pending appends and close. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        await self.backend.close()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- writing ------------------------------------------------------------------------
    async def append(
        self,
        stream: str,
        events: Sequence[Event],
        expected_version: int,
        metadata: EventMetadata | None = None,
        *,
        lease: LeaseToken | None = None,
    ) -> list[RecordedEvent]:
        """Append ``events`` atomically to ``stream``; return them with their envelopes.

        ``lease`` is the writer's lease of ``stream`` on a backend shared by several
        processes (a :class:`LeaseBackend`): the append is refused with :class:`Fenced`
        once another process has taken the stream over. Other backends ignore it (one
        process writes them).

        Raises :class:`VersionConflict` if the stream is not at ``expected_version``,
        :class:`InvalidAppend` (nothing written) for bad input: :class:`InvalidEvent` for a
        field whose value does not match its declared type (the decoder would refuse it),
        :class:`PayloadTooLarge` for an event over ``max_payload_bytes``, :class:`Fenced`
        (nothing written) for a ``lease`` that another process's takeover made stale.
        """
        # Timed only when an SDK is set: without one an append pays a single check.
        started = time.perf_counter() if metrics_enabled() else None
        if self._closed:
            raise StoreClosed("the event store is closed")
        if type(stream) is not str or stream not in self._valid_streams:
            self._remember_stream(stream)
        if type(events) is not list or not 0 < len(events) <= _MAX_EVENTS_PER_APPEND:
            _check_events(stream, events)
        if type(expected_version) is not int or expected_version < ANY:
            raise InvalidAppend(
                f"expected_version must be an int >= {NO_STREAM} or ANY ({ANY}), "
                f"not {expected_version!r}"
            )
        if metadata is None:
            metadata = NO_METADATA
        elif not isinstance(metadata, EventMetadata):
            raise InvalidAppend("metadata must be an events.EventMetadata")
        _, decode = self.registry.current_decoding()
        if len(events) == 1:  # most appends: spare the comprehensions their frames
            record, event = self._encode(stream, events[0], decode)
            if lease is None:
                stored = await self.backend.append(stream, [record], expected_version, metadata)
            else:
                stored = await self._append_fenced(
                    stream, [record], expected_version, metadata, lease
                )
            if started is not None:
                self._measure_append(started)
            if stored[0].payload is record.payload:  # fresh: reuse the objects
                return [recorded_from_row(stored[0], event)]
            return self._decode_all(stored)
        encoded = [self._encode(stream, event, decode) for event in events]
        records = [record for record, _ in encoded]
        if lease is None:
            stored = await self.backend.append(stream, records, expected_version, metadata)
        else:
            stored = await self._append_fenced(stream, records, expected_version, metadata, lease)
        if started is not None:
            self._measure_append(started)
        if stored and stored[0].payload is records[0].payload:  # fresh: reuse the objects
            return [recorded_from_row(r, e) for r, (_, e) in zip(stored, encoded, strict=True)]
        return self._decode_all(stored)

    def _append_fenced(
        self,
        stream: str,
        records: list[NewRecord],
        expected_version: int,
        metadata: EventMetadata,
        lease: LeaseToken,
    ) -> Awaitable[list[StoredRecord]]:
        if not isinstance(lease, LeaseToken):
            raise InvalidAppend("lease must be an events.LeaseToken")
        if not self._fences:
            return self.backend.append(stream, records, expected_version, metadata)
        return cast(LeaseBackend, self.backend).append(
            stream, records, expected_version, metadata, lease=lease
        )

    def _measure_append(self, started: float) -> None:
        """Records a successful append's duration (the caller's wait, group commit included)."""
        meters, seconds = instruments(), time.perf_counter() - started
        meters.record(meters.append_duration, seconds, self._metric_attributes)

    def _remember_stream(self, stream: object) -> None:
        """Validate a stream name once; appends to known streams skip the pattern match."""
        validate_stream(stream)
        if len(self._valid_streams) >= _MAX_REMEMBERED_STREAMS:
            self._valid_streams.clear()
        self._valid_streams.add(stream)  # type: ignore[arg-type]

    def _encode(
        self, stream: str, event: object, decode: Callable[[bytes], Any]
    ) -> tuple[NewRecord, Event]:
        """Encode ``event`` and decode the bytes back with the readers' decoder.

        msgspec does not check field types when a Struct is built, so only decoding can
        tell whether readers will accept the payload; doing it here (a few hundred
        nanoseconds for a typical event) keeps a value of the wrong type out of the log.
        The decoded event is what append returns: the writer sees what a replay will see.
        """
        if not isinstance(event, Event):
            raise InvalidAppend(
                f"cannot append {type(event).__name__} to {stream!r}: only events.Event instances"
            )
        try:
            tag, schema_version, payload = self.registry.encode(event)
        except _ENCODE_ERRORS as exc:
            raise _invalid_event(event, str(exc)) from exc
        if len(payload) > self.max_payload_bytes:
            raise PayloadTooLarge(
                f"{tag} event for {stream!r} is {len(payload)} bytes encoded; the limit is "
                f"{self.max_payload_bytes} (store large blobs elsewhere and record a reference)"
            )
        try:
            decoded = decode(payload)
        except DECODE_ERRORS as exc:
            raise _invalid_event(event, str(exc)) from exc
        return NewRecord(tag, schema_version, payload), decoded

    # -- reading ------------------------------------------------------------------------
    async def read_stream(
        self, stream: str, from_version: int = 1, limit: int | None = None
    ) -> list[RecordedEvent]:
        """Events of ``stream`` from ``from_version`` (inclusive), in version order.

        A row that does not decode raises :class:`CorruptEvent` (its position, and the
        good events before it in ``events``); a damaged file :class:`StoreDamaged`.
        """
        self._check_open()
        validate_stream(stream)
        rows = await self.backend.read_stream(stream, from_version, limit)
        return self._decode_all(rows)

    async def iter_stream(
        self, stream: str, from_version: int = 1, *, page_size: int = 1000
    ) -> AsyncIterator[RecordedEvent]:
        """Every event of ``stream`` from ``from_version`` on, read ``page_size`` at a time:
        a long stream in bounded memory. Errors as :meth:`read_stream`."""
        version = from_version
        while True:
            page = await self.read_stream(stream, version, page_size)
            for recorded in page:
                yield recorded
            if len(page) < page_size:
                return
            version = page[-1].version + 1

    async def read_all(
        self,
        from_position: int = 1,
        limit: int = 1000,
        *,
        stream_prefix: str | None = None,
        types: Sequence[str] | None = None,
    ) -> list[RecordedEvent]:
        """Up to ``limit`` events from ``from_position`` (inclusive) in global order.

        A row that does not decode raises :class:`CorruptEvent` naming its position, with
        the good events of the page before it in ``events``; nothing after it is returned
        (resume at ``position + 1`` to skip the row). A damaged file raises
        :class:`StoreDamaged`. :class:`~clawlog.events.LogPages` walks the log page by
        page and can step over both.
        """
        self._check_open()
        if limit < 1:
            raise ValueError("limit must be at least 1")
        rows = await self.backend.read_all(from_position, limit, stream_prefix, _types(types))
        return self._decode_all(rows)

    def subscribe(
        self,
        from_position: int = 1,
        *,
        stream_prefix: str | None = None,
        types: Sequence[str] | None = None,
        batch_size: int = 500,
        skip_corrupt: bool = False,
    ) -> Subscription:
        """Catch up from ``from_position`` (inclusive), then follow live appends.

        Use as ``async with store.subscribe(p) as events: async for e in events: ...``.
        A row that does not decode raises :class:`CorruptEvent` once the events before it
        were delivered, and again at each later call (the subscription stays at it),
        unless ``skip_corrupt``: then it is skipped, logged and listed in
        ``subscription.skipped``.
        """
        self._check_open()
        return Subscription(
            self, from_position, stream_prefix, _types(types), batch_size, skip_corrupt=skip_corrupt
        )

    async def stream_version(self, stream: str) -> int:
        """The stream's current version (0 if it has no events)."""
        self._check_open()
        return await self.backend.stream_version(validate_stream(stream))

    async def head_position(self) -> int:
        """The position of the newest event (0 for an empty log)."""
        self._check_open()
        return await self.backend.head_position()

    # -- snapshots ----------------------------------------------------------------------
    async def save_snapshot(self, stream: str, version: int, state: msgspec.Struct) -> None:
        """Save ``state`` as the state of ``stream`` after ``version``. Older ones are replaced."""
        self._check_open()
        validate_stream(stream)
        payload = self._snapshot_encoder.encode(state)
        state_type = f"{type(state).__module__}.{type(state).__qualname__}"
        await self.backend.save_snapshot(
            SnapshotRecord(stream, version, state_type, payload, time.time())
        )

    async def load_snapshot(self, stream: str, state_type: type[S]) -> Snapshot | None:
        """The latest snapshot of ``stream`` decoded as ``state_type``, or None.

        A snapshot that no longer decodes (the state class changed) is ignored: the caller
        folds the stream from the start instead, which is always correct.
        """
        self._check_open()
        record = await self.backend.load_snapshot(validate_stream(stream))
        if record is None:
            return None
        try:
            state = msgspec.msgpack.decode(record.payload, type=state_type)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            _log.warning("snapshot ignored", stream=stream, version=record.version, error=str(exc))
            return None
        return Snapshot(
            stream=record.stream,
            version=record.version,
            state=state,
            recorded_at=record.recorded_at,
        )

    # -- helpers ------------------------------------------------------------------------
    def _decode_all(self, rows: list[StoredRecord]) -> list[RecordedEvent]:
        """Decode a page: one pass with the union decoder, inlined (per-row calls are
        most of the cost), then a check that sends any row the fast pass cannot vouch for
        (an unknown tag, an older schema version) through the registry."""
        classes, decode = self.registry.current_decoding()
        try:
            decoded = [
                RecordedEvent(
                    position=r.position,
                    stream=r.stream,
                    version=r.version,
                    type=r.type,
                    event=decode(r.payload),
                    recorded_at=r.recorded_at,
                    correlation_id=r.correlation_id,
                    causation_id=r.causation_id,
                    actor=r.actor,
                    idempotency_key=r.idempotency_key,
                    schema_version=r.schema_version,
                )
                for r in rows
            ]
        except DECODE_ERRORS:
            return self._decode_one_by_one(rows)
        get = classes.get
        i = 0
        try:
            for i, recorded in enumerate(decoded):
                cls = type(recorded.event)
                if get(recorded.type) is not cls or recorded.schema_version < cls.schema_version:  # type: ignore[union-attr]
                    decoded[i] = decode_row(self.registry, rows[i])
        except CorruptEvent as exc:  # an upcaster's output does not decode
            exc.events = decoded[:i]
            raise
        return decoded

    def _decode_one_by_one(self, rows: list[StoredRecord]) -> list[RecordedEvent]:
        """The slow path of a page the fast pass refused: the first row that does not
        decode raises :class:`CorruptEvent` carrying the good events before it."""
        decoded: list[RecordedEvent] = []
        for row in rows:
            try:
                decoded.append(decode_row(self.registry, row))
            except CorruptEvent as exc:
                exc.events = decoded
                raise
        return decoded

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("the event store is closed")


def decode_row(registry: EventRegistry, row: StoredRecord) -> RecordedEvent:
    """Decode one stored row through ``registry`` (upcasters, unknown tags); a payload
    that does not decode raises :class:`CorruptEvent` naming the row's position."""
    try:
        event = registry.decode(row.type, row.schema_version, row.payload)
    except DECODE_ERRORS as exc:
        raise CorruptEvent(row.position, row.stream, row.type, str(exc)) from exc
    return recorded_from_row(row, event)


def recorded_from_row(row: StoredRecord, event: Any) -> RecordedEvent:
    """The envelope of ``row`` around its already decoded ``event``."""
    return RecordedEvent(
        position=row.position,
        stream=row.stream,
        version=row.version,
        type=row.type,
        event=event,
        recorded_at=row.recorded_at,
        correlation_id=row.correlation_id,
        causation_id=row.causation_id,
        actor=row.actor,
        idempotency_key=row.idempotency_key,
        schema_version=row.schema_version,
    )


#: The ``backend`` metric attribute of the backends clawlog ships (others: their class name).
_BACKEND_NAMES = {
    "SqliteBackend": "sqlite",
    "PostgresBackend": "postgres",
    "MemoryBackend": "memory",
}


def _backend_name(backend: StorageBackend) -> str:
    name = type(backend).__name__
    return _BACKEND_NAMES.get(name, name)


def _check_events(stream: str, events: object) -> None:
    """Refuse anything but a non-empty sequence of at most ``_MAX_EVENTS_PER_APPEND``."""
    if isinstance(events, Event) or not isinstance(events, Sequence):
        raise InvalidAppend("events must be a list of Event instances")
    if not events:
        raise InvalidAppend(f"nothing to append to {stream!r}: the list of events is empty")
    if len(events) > _MAX_EVENTS_PER_APPEND:
        raise InvalidAppend(f"{len(events)} events in one append; at most {_MAX_EVENTS_PER_APPEND}")


def _invalid_event(event: Event, reason: str) -> InvalidEvent:
    """The typed refusal of ``event``, naming the first field that cannot round-trip."""
    tag = event_tag(type(event))
    at = _FIELD_IN_REASON.search(reason)
    if at is not None:  # the reason names the stored name: report the attribute set
        cls = type(event)
        names = dict(zip(cls.__struct_encode_fields__, cls.__struct_fields__, strict=True))
        return InvalidEvent(tag, names.get(at.group(1), at.group(1)), reason)
    for name in type(event).__struct_fields__:  # an encode error does not say where
        try:
            msgspec.msgpack.encode(getattr(event, name))
        except _ENCODE_ERRORS as exc:
            return InvalidEvent(tag, name, str(exc))
    return InvalidEvent(tag, None, reason)


def _types(types: Sequence[str] | None) -> list[str] | None:
    if types is None:
        return None
    if isinstance(types, str):
        raise ValueError("types must be a list of tags, not one string")
    return list(types)
