"""What a projection is: a fold of the log into read-model tables of its own.

A projection is any object with the attributes of :class:`Projection`. Two optional
attributes make it faster, never different:

- ``handle_batch(conn, events)``: writes the same rows as calling ``handle`` for each
  event in order (typically with one ``executemany``). If it raises, the runner rolls it
  back and applies the batch again, event by event, to find the one that fails.
- ``envelope_only = True``: the projection reads only envelope fields (:class:`Envelope`),
  so the runner does not decode payloads for it during catch-up and rebuilds.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import Protocol

from clawlog.events import RecordedEvent

from .errors import InvalidProjection

__all__ = ["Envelope", "Projection", "validate_projections"]

_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


class Envelope(Protocol):
    """The envelope fields every recorded event has (a ``RecordedEvent`` or the store's
    undecoded row): what an ``envelope_only`` projection may read."""

    @property
    def position(self) -> int: ...
    @property
    def stream(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def recorded_at(self) -> float: ...
    @property
    def correlation_id(self) -> str | None: ...
    @property
    def actor(self) -> str | None: ...


class Projection(Protocol):
    """Set ``name``, ``version``, ``tables`` (DDL), ``table_names`` and ``types`` and
    implement ``handle``. Bump ``version`` when the tables or the fold change: the runner
    then drops the tables and rebuilds the projection from position 1.

    ``handle`` runs on the read-model database's thread inside the batch's transaction,
    with plain :mod:`sqlite3` calls. It must be deterministic (no clock, no randomness):
    a rebuild must produce exactly the rows the live run produced."""

    @property
    def name(self) -> str:
        """Unique among the runner's projections: lowercase letters, digits, underscores."""
        ...

    @property
    def version(self) -> int: ...

    @property
    def tables(self) -> Sequence[str]:
        """CREATE TABLE / CREATE INDEX statements, each with IF NOT EXISTS."""
        ...

    @property
    def table_names(self) -> Sequence[str]:
        """The tables ``tables`` creates: dropped on a rebuild, copied on a swap."""
        ...

    @property
    def types(self) -> Sequence[str] | None:
        """The event tags the projection reads, or None for every event."""
        ...

    def handle(self, conn: sqlite3.Connection, event: RecordedEvent) -> None:
        """Write the rows for one event."""
        ...


def validate_projections(projections: Sequence[Projection]) -> None:
    """Raise :class:`InvalidProjection` unless names are valid and unique and every
    projection declares its tables."""
    seen: set[str] = set()
    for projection in projections:
        name = getattr(projection, "name", None)
        if not isinstance(name, str) or _NAME.fullmatch(name) is None:
            raise InvalidProjection(
                f"{type(projection).__qualname__}: name {name!r} must be 1-63 lowercase "
                "letters, digits or underscores, starting with a letter"
            )
        if name in seen:
            raise InvalidProjection(f"two projections are named {name!r}")
        seen.add(name)
        if isinstance(projection.types, str):
            raise InvalidProjection(f"{name}: types must be a list of tags, not one string")
        for table in projection.table_names:
            if _NAME.fullmatch(table) is None or table == "projection_checkpoints":
                raise InvalidProjection(f"{name}: {table!r} cannot be a read-model table name")
