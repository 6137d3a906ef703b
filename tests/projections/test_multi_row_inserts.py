"""Handlers write many rows with multi-row INSERTs: the same rows as one-row statements."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from clawlog.projections._sql import insert_rows, select_in

_TABLE = "CREATE TABLE t (k INTEGER PRIMARY KEY, name TEXT, n INTEGER, x REAL, flag INTEGER)"
_UPSERT = "ON CONFLICT (k) DO UPDATE SET n = t.n + excluded.n, name = excluded.name"


def _rows(count: int) -> list[tuple[object, ...]]:
    # Keys repeat (k % 137), so the upsert meets rows of its own statement and earlier ones.
    return [(i % 137, f"row {i}", i, i / 7, i % 2 == 0 or None) for i in range(count)]


@pytest.mark.parametrize("count", [0, 1, 99, 100, 101, 250, 1000])
def test_multi_row_inserts_leave_the_rows_of_one_statement_per_row(
    tmp_path: Path, count: int
) -> None:
    one, many = sqlite3.connect(tmp_path / "one.db"), sqlite3.connect(tmp_path / "many.db")
    try:
        for conn in (one, many):
            conn.execute(_TABLE)
        one.executemany(f"INSERT INTO t VALUES (?, ?, ?, ?, ?) {_UPSERT}", _rows(count))
        insert_rows(many, "INSERT INTO t", _rows(count), _UPSERT)
        expected = one.execute("SELECT * FROM t ORDER BY k").fetchall()
        assert many.execute("SELECT * FROM t ORDER BY k").fetchall() == expected
        assert len(expected) == min(count, 137)
    finally:
        one.close()
        many.close()


def test_a_failing_multi_row_insert_raises_sqlites_error(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "v.db")
    try:
        conn.execute(_TABLE)
        with pytest.raises(sqlite3.IntegrityError, match=r"UNIQUE constraint failed: t\.k"):
            insert_rows(conn, "INSERT INTO t", _rows(200))
    finally:
        conn.close()


def test_select_in_reads_every_key_in_chunks(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "v.db")
    try:
        conn.execute(_TABLE)
        insert_rows(conn, "INSERT INTO t", _rows(137))
        keys = [*range(0, 137, 3), 5000]  # a key with no row is simply not found
        found = select_in(conn, "SELECT k FROM t WHERE n >= ? AND k IN", keys * 20, (0,))
        assert sorted({k for (k,) in found}) == list(range(0, 137, 3))
    finally:
        conn.close()
