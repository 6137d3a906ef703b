"""The hash chain of the log: what each event's ``hash`` is, byte for byte.

Every event the writer commits carries ``hash`` = SHA-256 over the previous event's hash
and every column of its own row, so that changing, removing, adding or moving a row
breaks the chain where it happened (:mod:`.verify` finds that place). The writers compute
it inside their group commit: SQLite on its writer thread (:mod:`.backends.sqlite_writer`),
PostgreSQL in the server-side function that assigns positions
(:mod:`.backends.postgres_sql`), so that several processes extend one chain.

The encoding (chain version 1), all integers big-endian::

    hash(n) = SHA-256(
        hash(n - 1)                  32 bytes; GENESIS (32 zero bytes) before the first event
        position                     u64
        version                      u64
        schema_version               u64
        recorded_at                  IEEE 754 double, 8 bytes
        payload                      u32 length, then the bytes
        type                         u32 length, then UTF-8
        stream                       u32 length, then UTF-8
        correlation_id               0x00 if NULL, else 0x01, u32 length, UTF-8
        causation_id                 the same
        actor                        the same
        idempotency_key              the same
    )

The fixed-size fields come first and every variable one carries its length, so no two
different rows encode alike (no field can spill into the next). The writer's last
``(position, hash)`` is also recorded beside the log (its *recorded head*), so a cut tail
shows even when nothing is appended after it.
"""

from __future__ import annotations

import functools
import hashlib
import struct
from collections.abc import Sequence
from typing import Any

import msgspec

__all__ = [
    "CHAIN_VERSION",
    "GENESIS",
    "HASH_SIZE",
    "LINK_PREFIX",
    "ChainState",
    "ChainedRow",
    "envelope_field",
    "link",
    "row_link",
    "type_field",
]

#: The version of the encoding above.
CHAIN_VERSION = 1
HASH_SIZE = 32
#: The previous hash of the first event.
GENESIS = bytes(HASH_SIZE)

#: A stored row with its hash, as the chain readers return it: ``position, stream,
#: version, type, schema_version, payload, recorded_at, correlation_id, causation_id,
#: actor, idempotency_key, hash`` (the values as stored: a damaged row may hold anything).
ChainedRow = tuple[Any, ...]

#: position, version, schema_version, recorded_at, len(payload).
FIXED = struct.Struct(">QQQdI")
#: The previous hash and the fixed-size fields in one ``pack`` call, for a writer (whose
#: previous hash is always its own 32-byte digest: ``32s`` pads or cuts any other length,
#: so :func:`link`, which also hashes stored values, concatenates instead).
LINK_PREFIX = struct.Struct(">32sQQQdI")
_LENGTH = struct.Struct(">I").pack
_ABSENT = b"\x00"
_PRESENT = b"\x01"
_sha256 = hashlib.sha256


class ChainState(msgspec.Struct, frozen=True):
    """The chain as the writer left it, and the log's last row, read in one snapshot."""

    #: The position and hash of the last event the writer committed.
    recorded_position: int
    recorded_hash: bytes
    #: The largest position in the events table (0 if it is empty).
    last_position: int


def _text(value: str) -> bytes:
    data = value.encode()
    return _LENGTH(len(data)) + data


@functools.lru_cache(maxsize=1024)
def type_field(event_type: str) -> bytes:
    """The encoded ``type`` field (cached: a log has few types)."""
    return _text(event_type)


@functools.lru_cache(maxsize=4096)
def envelope_field(
    stream: str,
    correlation_id: str | None,
    causation_id: str | None,
    actor: str | None,
    idempotency_key: str | None,
) -> bytes:
    """The encoded fields after ``type``: the same for every event of one append (cached:
    the appends of one turn, and the rows verify reads of it, share theirs)."""
    parts = [_text(stream)]
    for value in (correlation_id, causation_id, actor, idempotency_key):
        parts.append(_ABSENT if value is None else _PRESENT + _text(value))
    return b"".join(parts)


def link(
    prev: bytes,
    position: int,
    stream: str,
    version: int,
    event_type: str,
    schema_version: int,
    payload: bytes,
    recorded_at: float,
    correlation_id: str | None = None,
    causation_id: str | None = None,
    actor: str | None = None,
    idempotency_key: str | None = None,
) -> bytes:
    """The hash of one event, chained to ``prev`` (the encoding of the module's docstring)."""
    fixed = FIXED.pack(position, version, schema_version, recorded_at, len(payload))
    envelope = envelope_field(stream, correlation_id, causation_id, actor, idempotency_key)
    return _sha256(b"".join((prev, fixed, payload, type_field(event_type), envelope))).digest()


def row_link(prev: bytes, row: Sequence[Any], position: int | None = None) -> bytes | None:
    """The hash a stored row should carry after ``prev``; None if the row holds values no
    writer stores (a text column holding bytes, a negative version): it cannot match.
    ``position`` hashes the row as if it stood there (to find where a moved row came from).
    """
    try:
        return link(
            prev,
            row[0] if position is None else position,
            row[1],
            row[2],
            row[3],
            row[4],
            row[5],
            row[6],
            row[7],
            row[8],
            row[9],
            row[10],
        )
    except (AttributeError, TypeError, struct.error, UnicodeEncodeError):
        return None
