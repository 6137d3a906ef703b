"""Full-text index of memory documents: SQLite FTS5, ranked with bm25.

Documents are cut into chunks at headings and about every 1,200 characters, each chunk
keeping its line range, so a hit points at the lines ``memory_get`` should read. The
index is a projection of the memory events: rebuilding it from the log gives the same
answers, so it lives in memory.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Iterator
from typing import NamedTuple

__all__ = ["MemoryHit", "MemoryIndex", "chunk_document"]

_CHUNK_CHARS = 1200
_WORD = re.compile(r"\w+", re.UNICODE)
_SCHEMA = """
CREATE VIRTUAL TABLE chunks USING fts5(
    text, agent UNINDEXED, user UNINDEXED, path UNINDEXED,
    start_line UNINDEXED, end_line UNINDEXED,
    tokenize = 'porter unicode61 remove_diacritics 2'
)
"""


class MemoryHit(NamedTuple):
    path: str
    #: ``""``: a global (agent-level) document; else the user's own.
    user: str
    start_line: int
    end_line: int
    snippet: str
    #: Higher is better (the negated bm25 rank).
    score: float


class Chunk(NamedTuple):
    start_line: int
    end_line: int
    text: str


def chunk_document(content: str) -> Iterator[Chunk]:
    """Chunks of whole lines, split before headings and at about 1,200 characters."""
    lines = content.splitlines()
    start, buffer, size = 1, list[str](), 0
    for number, line in enumerate(lines, start=1):
        heading = line.lstrip().startswith("#")
        if buffer and (size + len(line) > _CHUNK_CHARS or heading):
            yield Chunk(start, number - 1, "\n".join(buffer))
            start, buffer, size = number, [], 0
        buffer.append(line)
        size += len(line) + 1
    if buffer and any(part.strip() for part in buffer):
        yield Chunk(start, start + len(buffer) - 1, "\n".join(buffer))


def fts_query(text: str) -> str | None:
    """The words of ``text`` as an FTS5 OR-query (no operator of the user's reaches FTS5)."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))[:32]
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


class MemoryIndex:
    """One in-memory FTS5 table for every agent's memory documents. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(_SCHEMA)

    def index(self, agent: str, user: str, path: str, content: str) -> int:
        """(Re)index one document; returns its number of chunks."""
        rows = [
            (c.text, agent, user, path, c.start_line, c.end_line) for c in chunk_document(content)
        ]
        with self._lock, self._db:
            self._delete(agent, user, path)
            self._db.executemany(
                "INSERT INTO chunks (text, agent, user, path, start_line, end_line) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
        return len(rows)

    def remove(self, agent: str, user: str, path: str) -> None:
        with self._lock, self._db:
            self._delete(agent, user, path)

    def _delete(self, agent: str, user: str, path: str) -> None:
        self._db.execute(
            "DELETE FROM chunks WHERE agent = ? AND user = ? AND path = ?", (agent, user, path)
        )

    def search(
        self, agent: str, user: str, query: str, limit: int, shadowed: frozenset[str]
    ) -> list[MemoryHit]:
        """The best chunks of ``user``'s and the global documents; global documents in
        ``shadowed`` (the user has their own copy) are left out."""
        match = fts_query(query)
        if match is None or limit <= 0:
            return []
        sql = (
            "SELECT path, user, start_line, end_line, "
            "snippet(chunks, 0, '**', '**', '…', 16), bm25(chunks) "
            "FROM chunks WHERE chunks MATCH ? AND agent = ? AND (user = ? OR (user = '' "
            "AND path NOT IN (SELECT value FROM json_each(?)))) "
            "ORDER BY bm25(chunks) LIMIT ?"
        )
        hidden = json.dumps(sorted(shadowed))
        with self._lock:
            rows = self._db.execute(sql, (match, agent, user, hidden, limit)).fetchall()
        return [
            MemoryHit(path, owner, int(start), int(end), snippet, -rank)
            for path, owner, start, end, snippet, rank in rows
        ]

    def close(self) -> None:
        with self._lock:
            self._db.close()
