"""Reading the read models: a shared read-only connection, and the base of every reader.

    async with await open_read_models("clawlog.views.db") as views:
        audit = ToolAuditReader(views)
        await audit.wait_until(recorded[-1].position)   # read your own writes
        refused = await audit.calls(tool="exec", refused=True)

``wait_until`` waits on the checkpoints: notified by the runner when it runs in this
process (pass ``runner=``), otherwise by polling the checkpoint table, which another
process's runner moves.

Every listing pages in bounded memory with the same keywords:

- ``after``: the cursor, exclusive: the last row's ``position`` for the listings in log
  order (0 for the first page); the last row's name for the listings by name (actors,
  streams, MCP servers) and its key for MCP grants (None for the first page);
- ``limit``: rows per page, -1 for all;
- ``since``: epoch seconds, on the row's own time column (when it was recorded,
  requested, created; an MCP server: since when it is in its state).

Each query is a range of an index in the listing's order (``tests/projections/
test_query_plans.py`` holds them to it), so a page costs the same on any size of log.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Literal, TypeVar

import aiosqlite

from ._apply import ProjectionStatus, read_statuses
from ._db import connect_views, on_thread
from .errors import NotCaughtUp, ProjectionFailed, ReadModelsUnavailable
from .runner import ProjectionRunner

__all__ = ["ReadModels", "Reader", "open_read_models"]

_T = TypeVar("_T")


class ReadModels:
    """A read-only connection to a read-model file, shared by any number of readers."""

    def __init__(
        self,
        path: str | Path,
        *,
        runner: ProjectionRunner | None = None,
        poll_interval: float = 0.02,
    ) -> None:
        self.path = Path(path)
        self.runner = runner
        self.poll_interval = poll_interval
        self._conn: aiosqlite.Connection | None = None
        self._state: Literal["unopened", "open", "closed"] = "unopened"

    async def open(self) -> ReadModels:
        if self._state != "unopened":
            raise ReadModelsUnavailable(f"this ReadModels is {self._state}; create a new one")
        self._conn = await connect_views(self.path, "read")
        self._state = "open"
        return self

    async def __aenter__(self) -> ReadModels:
        if self._state == "unopened":
            await self.open()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection. Safe to call twice."""
        if self._state == "closed":
            return
        self._state = "closed"
        if self._conn is not None:
            await self._conn.close()

    # -- queries ------------------------------------------------------------------------
    async def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of one SELECT, fetched in one call on the connection's thread."""
        return await self.call(_fetch_all, sql, params)

    async def call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run ``fn(sqlite3_connection, *args)`` on the connection's thread."""
        if self._state != "open" or self._conn is None:
            raise ReadModelsUnavailable(f"the read models of {self.path} are {self._state}")
        try:
            return await on_thread(self._conn, fn, *args)
        except sqlite3.OperationalError as exc:
            raise ReadModelsUnavailable(f"reading {self.path} failed: {exc}") from exc

    async def statuses(self) -> dict[str, ProjectionStatus]:
        """Every projection's stored checkpoint, by name."""
        return await self.call(read_statuses)

    # -- read your writes ---------------------------------------------------------------
    async def wait_until(
        self, position: int, timeout: float = 10.0, names: Sequence[str] | None = None
    ) -> None:
        """Return once the projections (``names``, or all) have applied ``position``.

        Raises :class:`ProjectionFailed` if one failed before it, :class:`NotCaughtUp`
        after ``timeout`` seconds."""
        if self.runner is not None:
            await self.runner.wait_until(position, timeout, names)
            return
        try:
            async with asyncio.timeout(timeout):
                while not _reached(await self.statuses(), position, names):
                    # The runner is another process: only its checkpoint row tells us.
                    await asyncio.sleep(self.poll_interval)
        except TimeoutError as exc:
            raise NotCaughtUp(
                f"read models in {self.path} did not reach position {position} in {timeout} s"
            ) from exc


async def open_read_models(
    path: str | Path, *, runner: ProjectionRunner | None = None, poll_interval: float = 0.02
) -> ReadModels:
    """Open the read-model file at ``path`` for reading (it must exist)."""
    return await ReadModels(path, runner=runner, poll_interval=poll_interval).open()


class Reader:
    """Base of the query objects: each reads the tables of one projection."""

    #: The projection whose checkpoint ``wait_until`` waits on.
    projection: ClassVar[str]

    def __init__(self, models: ReadModels) -> None:
        self.models = models

    async def wait_until(self, position: int, timeout: float = 10.0) -> None:
        """Return once this reader's projection has applied ``position``."""
        await self.models.wait_until(position, timeout, (self.projection,))


def _reached(
    statuses: dict[str, ProjectionStatus], position: int, names: Sequence[str] | None
) -> bool:
    for name in names if names is not None else list(statuses):
        status = statuses.get(name)
        if status is None:
            return False  # the runner has not created it yet
        if status.position >= position:
            continue
        if status.status == "failed":
            raise ProjectionFailed(name, status.failed_at or 0, status.error or "")
        return False
    return True


def _fetch_all(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    return conn.execute(sql, params).fetchall()


def where(clauses: list[str]) -> str:
    """`` WHERE a AND b`` for the non-empty list of conditions, else ``""``."""
    return f" WHERE {' AND '.join(clauses)}" if clauses else ""


def check_page(after: int, limit: int, since: float | None = None) -> None:
    """Refuse paging arguments no listing can honour, naming the fix."""
    if since is not None and (isinstance(since, bool) or not isinstance(since, int | float)):
        raise ValueError(f"since={since!r}: pass a moment as epoch seconds (a float), or None")
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise ValueError(
            f"after={after!r}: pass 0 for the first page, then the last row's position"
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < -1:
        raise ValueError(f"limit={limit!r}: pass a count of rows (0 or more), or -1 for all")


def log_order(
    table: str, column: str, after: int, since: float | None
) -> tuple[list[str], list[Any]]:
    """The conditions (and their parameters) of a page of ``table`` in log order: rows
    past position ``after`` and, with ``since``, whose time ``column`` is at or after it,
    both answered by indexes (the primary key, then the index on ``column``).

    The rows' times rise with their positions (the log stamps events in the order it
    appends them), so the first row at or after ``since`` in the time index bounds the
    page from below, and the page reads on by position from there: a range, never a scan
    of what came before. A row stamped earlier than one before it (a clock stepped back;
    several PostgreSQL writers racing) can fall out near that bound: such rows are
    milliseconds apart. ONE range condition on ``position``: SQLite seeks on only one
    lower bound, so the cursor and the time's bound are folded into it with ``max``."""
    if since is None:
        return ["position > ?"], [after]
    first = f"(SELECT position FROM {table} WHERE {column} >= ? ORDER BY {column} LIMIT 1)"
    return [f"position > max(?, {first} - 1)", f"{column} >= ?"], [after, since, since]
