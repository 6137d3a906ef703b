"""What surrounds an event: the metadata a writer gives and the envelope the store records."""

from __future__ import annotations

import datetime as dt

import msgspec

from .base import Event, UnknownEvent

__all__ = [
    "NO_METADATA",
    "EventMetadata",
    "Lease",
    "LeaseToken",
    "NewRecord",
    "RecordedEvent",
    "StoredRecord",
]


class EventMetadata(msgspec.Struct, frozen=True, kw_only=True):
    """Who and what caused an append. Applies to every event of one append call."""

    #: The user turn or job that caused the events.
    correlation_id: str | None = None
    #: The event or message that directly caused them.
    causation_id: str | None = None
    #: Who wrote them (an actor path such as ``session/main/u1``).
    actor: str | None = None
    #: A repeated key returns the original envelopes and writes nothing.
    idempotency_key: str | None = None


#: The metadata of an append that gives none. Backends may test for it by identity.
NO_METADATA = EventMetadata()


class RecordedEvent(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A decoded event with its envelope, as readers see it.

    ``gc=False``: an envelope holds scalars and one frozen event, never a cycle, and a
    read page makes thousands of them (tracking them costs reads about a third).
    """

    #: Global, gapless order of the log, from 1.
    position: int
    stream: str
    #: Order within the stream, from 1.
    version: int
    #: The event's stable tag.
    type: str
    event: Event | UnknownEvent
    #: Seconds since the epoch (UTC) at which the store committed it.
    recorded_at: float
    correlation_id: str | None = None
    causation_id: str | None = None
    actor: str | None = None
    idempotency_key: str | None = None
    schema_version: int = 1

    @property
    def recorded_datetime(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.recorded_at, dt.UTC)


class NewRecord(msgspec.Struct, frozen=True, gc=False):
    """An encoded event on its way into a backend: the backend sees only bytes."""

    type: str
    schema_version: int
    payload: bytes


class StoredRecord(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A row as a backend returns it; decoding happens outside the backend. Only scalars:
    no cycle possible, so not tracked by the garbage collector (``gc=False``)."""

    position: int
    stream: str
    version: int
    type: str
    schema_version: int
    payload: bytes
    recorded_at: float
    correlation_id: str | None = None
    causation_id: str | None = None
    actor: str | None = None
    idempotency_key: str | None = None


class Lease(msgspec.Struct, frozen=True):
    """Who owns (writes) a stream, since which takeover, and until when."""

    stream: str
    #: The process holding the lease (a released or expired lease keeps its last holder).
    owner: str
    #: Goes up by one each time the holder changes; never goes down or repeats.
    epoch: int
    #: When the lease expires, in the server's clock (seconds since the Unix epoch).
    expires_at: float


class LeaseToken(msgspec.Struct, frozen=True):
    """What a lease holder presents with an append: the append is refused with
    :class:`~clawlog.events.Fenced` once another holder has taken the stream over."""

    owner: str
    epoch: int
