"""The hash chain on SQLite: where the writer resumes it, and the upgrade of an old log.

Both run on the writer's thread (:mod:`.sqlite_thread`), which holds the file's lock.

**Upgrade in place.** A log of schema 1 (written before the chain) is upgraded by the
first store that opens it for writing: ``events`` gets its ``hash`` column and the file
its ``chain_head`` table (one short transaction), then the existing rows are hashed in
position order, :data:`UPGRADE_BATCH` rows per transaction, ``chain_head`` recording how
far the chain has come; the transaction that hashes the last row sets the schema version
to 2. A crash or a kill in between loses nothing: the next writer resumes after the last
row hashed. A row that already has a hash keeps it: a chained file set back to schema 1
(its ``chain_head`` deleted) never gets an edit re-hashed into a seamless chain. Until
the version is 2 the file is still a schema 1 log: a read-only store reads it, and
:func:`clawlog.events.verify.verify_chain` says it has no chain yet. About 15 s per
million events (SHA-256 and one UPDATE per row).

**Resuming the chain.** The writer continues from its recorded head (``chain_head``),
not only from the table's largest position: when rows at the tail were deleted, the next
event takes the position after the recorded head and links to its hash, so the cut stays
visible as missing positions (``verify`` names the first) instead of being papered over.
Rows past the recorded head, or a lost ``chain_head`` row, can only come from outside
clawlog (the writer commits its events and its head in one transaction): the writer
refuses to open such a log (:class:`StoreDamaged`, :mod:`.chain_damage`), as extending
the chain after them would hide them; readers and ``clawlog verify`` still open it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from ..chain import GENESIS, HASH_SIZE, row_link
from ..errors import StoreDamaged
from ..logging import get_logger
from .chain_damage import CHAIN_ADVICE, LOST_HEAD_REASON, past_head_reason
from .sqlite_schema import CHAIN_HEAD_DDL, SCHEMA_VERSION, schema_version

__all__ = ["UPGRADE_BATCH", "lenient_text", "upgrade", "writer_head"]

#: Rows hashed per transaction while an old log is upgraded.
UPGRADE_BATCH = 10_000
_log = get_logger(__name__)
_ROW = (
    "SELECT position, stream, version, type, schema_version, payload, recorded_at, "
    "correlation_id, causation_id, actor, idempotency_key, hash FROM events "
    "WHERE position > ? ORDER BY position LIMIT ?"
)


def upgrade(conn: sqlite3.Connection, path: str, batch: int = UPGRADE_BATCH) -> None:
    """Bring a schema 1 log to schema 2 (see the module's docstring); nothing to do on a
    current one. Raises :class:`StoreDamaged` for a row no clawlog writer could have
    stored (it cannot be hashed)."""
    if schema_version(conn) >= SCHEMA_VERSION:
        return
    _log.info("upgrading the log to a hash chain", path=path)
    with _transaction(conn):
        columns = {row[1] for row in conn.execute("PRAGMA table_xinfo(events)")}
        if "hash" not in columns:
            conn.execute("ALTER TABLE events ADD COLUMN hash BLOB")
        conn.execute(CHAIN_HEAD_DDL)
        conn.execute("INSERT OR IGNORE INTO chain_head VALUES (1, 0, ?)", (GENESIS,))
    hashed = 0
    conn.text_factory = lenient_text
    try:
        hashed = _hash_rows(conn, path, batch)
    finally:
        conn.text_factory = str
    _log.info("log upgraded to a hash chain", path=path, events=hashed)


def lenient_text(data: bytes) -> str:
    """A TEXT value as str, bytes that are not UTF-8 kept as surrogates (which cannot be
    encoded back, so such a row never matches a hash)."""
    return data.decode("utf-8", "surrogateescape")


def _hash_rows(conn: sqlite3.Connection, path: str, batch: int) -> int:
    """Hash the rows past ``chain_head`` in batches; set the schema version at the end."""
    hashed = 0
    while True:
        with _transaction(conn):
            position, prev = conn.execute("SELECT position, hash FROM chain_head").fetchone()
            rows = conn.execute(_ROW, (position, batch)).fetchall()
            updates = []
            for row in rows:
                if row[11] is not None:
                    # Hashed already: a file set back to schema 1 (its chain_head gone) must
                    # not get its chain recomputed over an edit; verify judges the hash kept.
                    if row_link(prev, row) != row[11]:
                        _log.warning(
                            "a row's hash does not match while upgrading: kept as it is "
                            "(`clawlog verify` names it)",
                            path=path,
                            position=row[0],
                        )
                    prev = row[11]
                    continue
                linked = row_link(prev, row)
                if linked is None:
                    raise StoreDamaged(
                        path, row[0], "a row holds values no clawlog writer stores: it cannot "
                        "be hashed (run `clawlog doctor`)"
                    )  # fmt: skip
                prev = linked
                updates.append((prev, row[0]))
            conn.executemany("UPDATE events SET hash = ? WHERE position = ?", updates)
            if rows:
                conn.execute("UPDATE chain_head SET position = ?, hash = ?", (rows[-1][0], prev))
            if len(rows) < batch:
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        hashed += len(rows)
        if len(rows) < batch:
            return hashed


def writer_head(conn: sqlite3.Connection, path: str) -> tuple[int, bytes]:
    """The position and hash the writer's next event follows: the recorded head.

    Raises :class:`StoreDamaged` when ``chain_head`` has lost its row, or when rows lie
    past the recorded head: the writer commits its events and its head in one
    transaction, so such rows were added outside clawlog, and linking to them would make
    forged rows with fitting hashes undetectable. Readers (and ``clawlog verify``, which
    names the first such row) still open the log."""
    last = int(conn.execute("SELECT max(position) FROM events").fetchone()[0] or 0)
    row = conn.execute("SELECT position, hash FROM chain_head WHERE id = 1").fetchone()
    if row is None:
        raise StoreDamaged(path, None, LOST_HEAD_REASON, advice=CHAIN_ADVICE)
    recorded, recorded_hash = int(row[0]), row[1]
    if recorded < last:
        past = conn.execute("SELECT min(position) FROM events WHERE position > ?", (recorded,))
        first = int(past.fetchone()[0])
        reason = past_head_reason(recorded, first, last)
        raise StoreDamaged(path, first, reason, advice=CHAIN_ADVICE)
    if recorded > last:
        _log.warning(
            "the log's tail was deleted: new events follow the recorded head",
            path=path,
            missing_from=last + 1,
            recorded_head=recorded,
        )
    return recorded, _hash_or_genesis(recorded_hash)


def _hash_or_genesis(value: object) -> bytes:
    return value if isinstance(value, bytes) and len(value) == HASH_SIZE else GENESIS


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
