"""One call on an aiosqlite connection's own thread, for work of many statements.

aiosqlite has no public API for this; ``_execute`` is what its own methods use, hence the
pin ``aiosqlite < 0.23`` in pyproject.toml. The event store's reader and the projections'
read-model connections both use it: a whole batch is one thread hop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import aiosqlite

__all__ = ["call_on_thread"]

_T = TypeVar("_T")


async def call_on_thread(conn: aiosqlite.Connection, fn: Callable[..., _T], *args: Any) -> _T:
    """Run ``fn(sqlite3_connection, *args)`` as ONE call on the connection's thread."""
    return await conn._execute(lambda: fn(conn._conn, *args))  # type: ignore[no-any-return]
