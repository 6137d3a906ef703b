"""One batch, one transaction: rows and checkpoints move together (runs on the DB thread).

The stored checkpoints are read again inside every transaction, so the runner's own
bookkeeping can never make it apply an event twice: events at or below a projection's
stored checkpoint are skipped, and a checkpoint that moved back (a rebuild was swapped
in) makes the runner read again from there instead of leaving a gap.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from .base import Projection
from .errors import InvalidProjection

__all__ = [
    "Batch",
    "CorruptRow",
    "ProjectionStatus",
    "apply_batch",
    "create_indexes",
    "prepare",
    "read_statuses",
]

_ENVIRONMENTAL = ("disk", "locked", "i/o", "readonly", "no space")


class ProjectionStatus(msgspec.Struct, frozen=True):
    """A projection's checkpoint as stored: it has applied every event up to ``position``.
    A failed projection stopped before ``failed_at``, whose handler raised ``error``."""

    name: str
    version: int
    position: int
    status: Literal["ok", "failed"]
    error: str | None = None
    failed_at: int | None = None


@dataclass(slots=True, frozen=True)
class CorruptRow:
    """Stands, in the events of the projections that read its type, for a row that could
    not be decoded: those projections are marked failed at ``position``; the others go on."""

    position: int
    error: Exception


@dataclass(slots=True)
class Batch:
    """Events read from ``start`` through ``through`` (inclusive), routed per projection.

    ``through`` may lie past the last event: everything up to it was read, and events of
    types no projection reads were skipped by the store's query."""

    start: int
    through: int
    #: For each projection (runner order): its events, in position order.
    routed: list[list[Any]] = field(default_factory=list)
    #: True if no :class:`CorruptRow` is among them (the router knows; saves a scan).
    clean: bool = False
    #: Rows left out because they could not be decoded (a runner that skips corrupt
    #: rows): each with the indexes of the projections that would have read it.
    skipped: list[tuple[CorruptRow, tuple[int, ...]]] = field(default_factory=list)
    #: ``(first, last)`` positions of rows SQLite could not read at all, stepped over.
    damaged: list[tuple[int, int]] = field(default_factory=list)


def read_statuses(conn: sqlite3.Connection) -> dict[str, ProjectionStatus]:
    rows = conn.execute(
        "SELECT name, version, position, status, error, failed_at FROM projection_checkpoints"
    )
    return {row[0]: ProjectionStatus(*row) for row in rows}


def prepare(
    conn: sqlite3.Connection, projections: Sequence[Projection], defer_indexes: bool = False
) -> tuple[dict[str, ProjectionStatus], dict[str, int | None]]:
    """Create every projection's tables; drop and reset those whose version changed.
    Returns the statuses and ``{name: stored version}`` of those that start from position
    0 again (None for a projection new to this file).

    ``defer_indexes`` leaves the plain CREATE INDEX statements of the projections that
    start from position 0 (all of a rebuild's; a new or reset one) for
    :func:`create_indexes`: an index built once, at the end of the fold, costs a third of
    one kept up row by row. Handlers find rows by primary or UNIQUE key, which the
    tables keep. One that already applied events gets its indexes here, so a fold cut
    short (a crash, a damaged log) leaves no projection without them for long."""
    reset: dict[str, int | None] = {}
    conn.execute("BEGIN IMMEDIATE")
    try:
        stored = read_statuses(conn)
        for projection in projections:
            known = stored.get(projection.name)
            if known is None or known.version != projection.version:
                for table in projection.table_names:
                    conn.execute(f"DROP TABLE IF EXISTS {table}")
                conn.execute(
                    "INSERT OR REPLACE INTO projection_checkpoints "
                    "VALUES (?, ?, 0, 'ok', NULL, NULL)",
                    (projection.name, projection.version),
                )
                reset[projection.name] = known.version if known is not None else None
            fresh = projection.name in reset or (known is not None and known.position == 0)
            for ddl in projection.tables:
                if not (defer_indexes and fresh and _is_plain_index(ddl)):
                    _run_ddl(conn, projection, ddl)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # a failed COMMIT (full disk, I/O) already rolled back
            conn.execute("ROLLBACK")
        raise
    return read_statuses(conn), reset


def create_indexes(conn: sqlite3.Connection, projections: Sequence[Projection]) -> None:
    """Run the CREATE INDEX statements :func:`prepare` deferred."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for projection in projections:
            for ddl in projection.tables:
                if _is_plain_index(ddl):
                    _run_ddl(conn, projection, ddl)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # a failed COMMIT (full disk, I/O) already rolled back
            conn.execute("ROLLBACK")
        raise


def _is_plain_index(ddl: str) -> bool:
    return ddl.lstrip()[:12].upper() == "CREATE INDEX"


def _run_ddl(conn: sqlite3.Connection, projection: Projection, ddl: str) -> None:
    try:
        conn.execute(ddl)
    except sqlite3.Error as exc:
        raise InvalidProjection(f"{projection.name}: bad DDL ({exc}): {ddl}") from exc


def apply_batch(
    conn: sqlite3.Connection, projections: Sequence[Projection], batch: Batch
) -> dict[str, ProjectionStatus]:
    """Apply ``batch`` to every healthy projection and move its checkpoint, atomically."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        stored = read_statuses(conn)
        for projection, events in zip(projections, batch.routed, strict=True):
            known = stored.get(projection.name)
            if known is None or known.status != "ok" or known.position >= batch.through:
                continue
            if known.position < batch.start - 1:
                continue  # moved back behind this batch: the runner re-reads from there
            if known.position >= batch.start:
                events = [e for e in events if e.position > known.position]
            stored[projection.name] = _fold(
                conn, projection, known, events, batch.through, batch.clean
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # a failed COMMIT (full disk, I/O) already rolled back
            conn.execute("ROLLBACK")
        raise
    return stored


def _fold(
    conn: sqlite3.Connection,
    projection: Projection,
    known: ProjectionStatus,
    events: list[Any],
    through: int,
    clean: bool,
) -> ProjectionStatus:
    name = projection.name
    conn.execute(f"SAVEPOINT p_{name}")
    failure = _run_handlers(conn, projection, events, clean)
    if failure is None:
        conn.execute(
            "UPDATE projection_checkpoints SET position = ? WHERE name = ?", (through, name)
        )
        conn.execute(f"RELEASE p_{name}")
        return msgspec.structs.replace(known, position=through)
    index, exc = failure
    # Undo the half-applied batch, re-apply what came before the failing event (handlers
    # are deterministic), and stop just before it.
    conn.execute(f"ROLLBACK TO p_{name}")
    for earlier in events[:index]:
        projection.handle(conn, earlier)
    failed_at = events[index].position
    error = f"{type(exc).__name__}: {exc}"[:2000]
    conn.execute(
        "UPDATE projection_checkpoints SET position = ?, status = 'failed', error = ?, "
        "failed_at = ? WHERE name = ?",
        (failed_at - 1, error, failed_at, name),
    )
    conn.execute(f"RELEASE p_{name}")
    return msgspec.structs.replace(
        known, position=failed_at - 1, status="failed", error=error, failed_at=failed_at
    )


def _run_handlers(
    conn: sqlite3.Connection, projection: Projection, events: list[Any], clean: bool = False
) -> tuple[int, Exception] | None:
    """Apply ``events``; on a handler error return (index of the failing event, error).
    A corrupt row fails the projection there, after the events before it were applied.
    ``clean``: the caller knows there is no corrupt row among them."""
    corrupt = None if clean else _first_corrupt(events)
    if corrupt is not None:
        failure = _run_handlers(conn, projection, events[:corrupt], True)
        return failure if failure is not None else (corrupt, events[corrupt].error)
    batch_handler = getattr(projection, "handle_batch", None)
    if batch_handler is not None and events:
        try:
            batch_handler(conn, events)
            return None
        except Exception as exc:
            _raise_if_environmental(exc)
            conn.execute(f"ROLLBACK TO p_{projection.name}")  # find the event, one by one
    for index, event in enumerate(events):
        try:
            projection.handle(conn, event)
        except Exception as exc:
            _raise_if_environmental(exc)
            return index, exc
    return None


def _first_corrupt(events: list[Any]) -> int | None:
    return next((i for i, e in enumerate(events) if type(e) is CorruptRow), None)


def _raise_if_environmental(exc: Exception) -> None:
    """A full disk or a read-only file is not the projection's fault: fail the batch."""
    if isinstance(exc, sqlite3.OperationalError) and any(
        word in str(exc).lower() for word in _ENVIRONMENTAL
    ):
        raise exc
