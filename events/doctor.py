"""Examine an event log: SQLite's integrity check, the schema, a decode of every row, and
the hash chain.

``clawlog doctor`` runs :func:`examine`; an embedding application can run it too, for
instance at start-up or from a health endpoint::

    report = await examine("app.db")
    if not report.healthy:
        for line in report.problems():
            print(line)

Why here and not in ``backends/``: the decode is backend-neutral (it walks the log through
:class:`~.pages.LogPages`, as every reader does, with the store's registry); only the
integrity check and the schema comparison are SQLite's, and those reuse the identification
of :mod:`.backends.sqlite_schema`, so the doctor and the store's open judge a file alike.

The hash chain is checked as ``clawlog verify`` checks it (:func:`.verify.verify_chain`,
without a checkpoint): a break is a problem like a corrupt row (the log was changed outside
clawlog), named by its position and kind; ``chain`` says in one line what was found.

Memory stays bounded on any size of log: rows are counted page by page and never kept;
only the problems found are (a corrupt row, a damaged range, up to
:data:`INTEGRITY_MESSAGES` messages of SQLite's check).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .backends.sqlite_schema import (
    identify,
    may_open_immutable,
    read_failure,
    read_only_uri,
    schema_problems,
)
from .errors import CorruptEvent, EventStoreError, NoHashChain, StoreDamaged, StoreUnavailable
from .open import open_store
from .pages import LogPages
from .registry import EventRegistry
from .store import EventStore, decode_row
from .verify import verify_chain

__all__ = ["INTEGRITY_MESSAGES", "CorruptRow", "DoctorReport", "examine"]

#: At most this many messages of ``PRAGMA integrity_check`` (SQLite's default is 100).
INTEGRITY_MESSAGES = 100
_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


@dataclass(frozen=True, slots=True)
class CorruptRow:
    """One stored row whose payload does not decode."""

    position: int
    stream: str
    type: str
    #: What the decoder said.
    reason: str


@dataclass(slots=True)
class DoctorReport:
    """What :func:`examine` found. Empty lists mean "nothing wrong"."""

    #: The log examined: an SQLite path or a PostgreSQL URL, as given.
    log: str
    #: SQLite's ``PRAGMA integrity_check`` messages (empty: "ok"); None where there is no
    #: such check (PostgreSQL) or it could not run (SQLite cannot read the file at all).
    integrity: list[str] | None = None
    #: What is wrong with the file or its tables (a missing table or column, a truncated
    #: file); the rows are not decoded when this is not empty.
    schema: list[str] = field(default_factory=list)
    #: Rows read and decoded.
    rows: int = 0
    #: Rows read whose payload does not decode, in position order.
    corrupt: list[CorruptRow] = field(default_factory=list)
    #: ``(first, last)`` position ranges SQLite cannot read (damaged pages), in order.
    damaged: list[tuple[int, int]] = field(default_factory=list)
    #: Why the decode stopped before the end of the log (None: it read to the end).
    unread: str | None = None
    #: The hash chain in one line ("intact: ...", "none yet: ...", "not checked: ...");
    #: None when the log could not be opened to check it.
    chain: str | None = None
    #: The chain's first break (``position P: kind: detail``), None if there is none.
    chain_broken: str | None = None

    @property
    def healthy(self) -> bool:
        return not (
            self.integrity
            or self.schema
            or self.corrupt
            or self.damaged
            or self.unread
            or self.chain_broken
        )

    def problems(self) -> Iterator[str]:
        """One line per problem, for people."""
        for message in self.integrity or ():
            yield f"integrity check: {message}"
        for problem in self.schema:
            yield f"schema: {problem}"
        for row in self.corrupt:
            yield (
                f"corrupt event at position {row.position} (stream {row.stream!r}, "
                f"type {row.type!r}): {row.reason}"
            )
        for first, last in self.damaged:
            where = f"position {first}" if first == last else f"positions {first}-{last}"
            yield f"unreadable {where}: SQLite cannot read the page(s) holding them"
        if self.unread is not None:
            yield f"decode stopped: {self.unread}"
        if self.chain_broken is not None:
            yield f"hash chain broken at {self.chain_broken}"

    def summary(self) -> str:
        """One line: healthy or not, what was found, and what was checked."""
        if self.integrity is not None:
            checked = "integrity check run"
        elif self.log.startswith(_POSTGRES_SCHEMES):
            checked = "no integrity check (PostgreSQL has none; the full decode ran)"
        else:
            checked = "no integrity check (SQLite cannot read the file)"
        chain = f", hash chain {self.chain}" if self.chain else ""
        if self.healthy:
            return f"{self.log}: healthy: {self.rows} events decoded, schema ok{chain}, {checked}"
        found = [
            f"{count} {what}"
            for count, what in (
                (len(self.integrity or ()), "integrity check message(s)"),
                (len(self.schema), "schema problem(s)"),
                (len(self.corrupt), "corrupt event(s)"),
                (sum(last - first + 1 for first, last in self.damaged), "unreadable event(s)"),
            )
            if count
        ]
        if self.unread is not None:
            found.append("the decode stopped early")
        if self.chain_broken is not None:
            found.append("a broken hash chain")
        decoded = (
            "no event decoded (no store opens a log with this damage)"
            if self.schema
            else f"{self.rows} events decoded"
        )
        return f"{self.log} is damaged: {', '.join(found)}; {decoded}; {checked}"

    def to_json(self) -> dict[str, Any]:
        """The report as one JSON-ready document."""
        return {
            "log": self.log,
            "integrity": self.integrity,
            "schema": self.schema,
            "rows": self.rows,
            "corrupt": [
                {"position": r.position, "stream": r.stream, "type": r.type, "reason": r.reason}
                for r in self.corrupt
            ],
            "damaged": [[first, last] for first, last in self.damaged],
            "unread": self.unread,
            "chain": self.chain,
            "chain_broken": self.chain_broken,
            "healthy": self.healthy,
        }


async def examine(
    log: str | Path,
    *,
    store: EventStore | None = None,
    registry: EventRegistry | None = None,
    page_size: int = 1000,
) -> DoctorReport:
    """Examine the log at ``log`` (an SQLite path or a ``postgresql://`` URL) and report
    every problem found; it never writes to the log.

    SQLite: ``PRAGMA integrity_check``, the schema (as the store's open checks it), then a
    decode of every row through ``registry`` (default: clawlog's), stepping over corrupt
    rows and unreadable pages. PostgreSQL: the decode only (it has no integrity check).
    ``store``, if given, is an open store on the same log to decode through (the caller
    keeps and closes it); otherwise one is opened read-only, and closed.
    A damaged log is a report, not an error; raises :class:`EventStoreError`
    (:class:`NotAClawlogDatabase`, :class:`StoreUnavailable`, ...) only when the log
    cannot be examined at all: it is not a clawlog log, or it cannot be read.
    """
    text = str(log)
    owned = store is None
    if text.startswith(_POSTGRES_SCHEMES):
        report = DoctorReport(text)
    else:
        path = Path(text)
        if not path.is_file():
            raise EventStoreError(f"{path} is not a file (no clawlog log there)")
        integrity, schema = await asyncio.to_thread(_inspect_sqlite, path)
        report = DoctorReport(text, integrity=integrity, schema=schema)
        if schema:  # the store would refuse to open: nothing to decode
            return report
    try:
        if store is None:  # PostgreSQL has no read-only mode: the doctor never writes
            options = {} if text.startswith(_POSTGRES_SCHEMES) else {"read_only": True}
            store = await open_store(text, registry=registry, **options)
    except StoreDamaged as exc:  # damaged since the inspection
        report.schema.append(exc.reason)
        return report
    try:
        await _decode_every_row(store, report, page_size)
        await _check_chain(store, report)
    finally:
        if owned:
            await store.close()
    return report


def _inspect_sqlite(path: Path) -> tuple[list[str] | None, list[str]]:
    """``(integrity messages, schema problems)`` of an SQLite log, on a connection of its
    own (read-only, with the same immutable fallback as the store). No integrity check
    (None) when SQLite cannot read the file as a database at all."""
    conn = _connect(path, immutable=False)
    try:
        try:
            is_log = identify(conn, str(path))
        except StoreUnavailable as exc:
            if not may_open_immutable(path, exc.__cause__):
                raise
            conn.close()
            conn = _connect(path, immutable=True)
            is_log = identify(conn, str(path))
        if not is_log:
            raise EventStoreError(f"{path} is an empty file: it holds no clawlog log yet")
        return _integrity_messages(conn), _schema_problems(conn)
    except StoreDamaged as exc:  # the file itself cannot be read as a database
        return None, [exc.reason]
    finally:
        conn.close()


def _connect(path: Path, *, immutable: bool) -> sqlite3.Connection:
    try:
        return sqlite3.connect(read_only_uri(path, immutable=immutable), uri=True)
    except sqlite3.DatabaseError as exc:
        raise read_failure(exc, str(path)) from exc


def _integrity_messages(conn: sqlite3.Connection) -> list[str]:
    try:
        rows = conn.execute(f"PRAGMA integrity_check({INTEGRITY_MESSAGES})").fetchall()
    except sqlite3.DatabaseError as exc:
        return [f"stopped early: {exc}"]
    # SQLite may return several messages in one row, joined by newlines, under a
    # "*** in database main ***" heading: one message per line, without the heading.
    messages = [
        line.strip()
        for row in rows
        for line in str(row[0]).splitlines()
        if line.strip() and not line.startswith("*** in database")
    ]
    return [] if messages == ["ok"] else messages[:INTEGRITY_MESSAGES]


def _schema_problems(conn: sqlite3.Connection) -> list[str]:
    try:
        return schema_problems(conn)
    except sqlite3.DatabaseError as exc:
        return [f"the schema cannot be read: {exc}"]


async def _decode_every_row(store: EventStore, report: DoctorReport, page_size: int) -> None:
    """Count every row that decodes; record the corrupt ones and the unreadable ranges."""
    pages = LogPages(store, page_size=page_size, skip_corrupt=True)
    try:
        async for page in pages:
            report.rows += len(page)
    except StoreDamaged as exc:  # not even the head can be read: no way round
        where = f"at position {exc.position}" if exc.position is not None else ""
        report.unread = " ".join(f"the log cannot be read {where}: {exc.reason}".split())
    report.damaged.extend(pages.damaged)
    for position in pages.skipped:
        row = await _corrupt_row(store, position)
        if row is None:  # decodes when read alone: not corrupt after all
            report.rows += 1
        else:
            report.corrupt.append(row)


async def _check_chain(store: EventStore, report: DoctorReport) -> None:
    """The hash chain's status line, and its first break (a problem)."""
    try:
        chain = await verify_chain(store)
    except NoHashChain:
        report.chain = "none yet (a log from before it: `clawlog verify --upgrade` adds one)"
        return
    except StoreDamaged as exc:
        where = f"position {exc.position}" if exc.position is not None else "its head"
        report.chain = f"not checked: unreadable at {where}"
        if not (report.damaged or report.unread):  # not the pages listed above: the chain's
            report.chain_broken = f"{where}: {exc.reason}"
        return
    if chain.broken is None:
        report.chain = f"intact up to head {chain.head_position}"
    else:
        report.chain = f"broken at position {chain.broken.position}"
        report.chain_broken = chain.broken.line()


async def _corrupt_row(store: EventStore, position: int) -> CorruptRow | None:
    """What is wrong with the row at ``position``, read alone (the skip kept only its
    position): its stream, type and the decoder's words."""
    rows = await store.backend.read_all(position, 1, None, None)
    if not rows or rows[0].position != position:
        return CorruptRow(position, "?", "?", "skipped while reading, then gone when read alone")
    try:
        decode_row(store.registry, rows[0])
    except CorruptEvent as exc:
        return CorruptRow(exc.position, exc.stream, exc.type, exc.reason)
    return None
