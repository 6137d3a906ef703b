"""What a projection is: a fold of the log into read-model tables of its own."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import ClassVar, Protocol

from events import RecordedEvent

__all__ = ["Projection"]


class Projection(Protocol):
    """Subclasses set ``name``, ``version``, ``tables`` (DDL) and ``types`` (the event tags
    it reads, or None for all) and implement ``handle``. Bump ``version`` when the tables or
    the fold change: the runner then rebuilds the projection from position 1."""

    name: ClassVar[str]
    version: ClassVar[int]
    #: CREATE TABLE statements (IF NOT EXISTS); table names start with the projection name.
    tables: ClassVar[Sequence[str]]
    #: Names of the tables, dropped on a rebuild.
    table_names: ClassVar[Sequence[str]]
    types: ClassVar[Sequence[str] | None]

    def handle(self, conn: sqlite3.Connection, event: RecordedEvent) -> None:
        """Write the rows for one event. Runs inside the batch's transaction."""
        ...
