"""Every listing pages in bounded memory and filters by time the same way: ``after`` (the
last row's cursor), ``limit`` and ``since`` give, page after page, exactly the rows of the
whole listing, in its order; bad paging arguments are refused with what to pass instead."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clawlog.events import ANY, EventMetadata, open_store
from clawlog.events.domain.delegation import DelegationRequested
from clawlog.projections import (
    ALL_PROJECTIONS,
    ActorLifecycleReader,
    DelegationReader,
    HandoffRouteReader,
    McpHealthReader,
    ProjectionRunner,
    ReadModels,
    SessionHistoryReader,
    StreamCatalogReader,
    SubagentTaskReader,
    TaskBoardReader,
    ToolAuditReader,
)
from clawlog.projections._db import CHECKPOINTS_DDL, VIEWS_APPLICATION_ID
from clawlog.projections.testing import dump_tables, write_mixed_log
from tests.projections.support import write_turns

HISTORY = "session/long/chat"
#: Delegations still running at the end of the log (the mixed log's all end).
RUNNING = 12
NOW = 10_000.0


@dataclass(frozen=True)
class Listing:
    """A reader's listing: how to fetch a page, the row's cursor and its own time."""

    name: str
    fetch: Callable[..., Awaitable[list[Any]]]
    cursor: Callable[[Any], Any]
    time: Callable[[Any], float | None] | None
    #: The cursor of the first page.
    first: Any = 0


def by_position(row: Any) -> int:
    return int(row.position)


LISTINGS = [
    Listing("audit", lambda m, **kw: ToolAuditReader(m).calls(**kw), by_position,
            lambda r: r.requested_at),
    Listing("audit --tool", lambda m, **kw: ToolAuditReader(m).calls(tool="exec", **kw),
            by_position, lambda r: r.requested_at),
    Listing("audit --refused", lambda m, **kw: ToolAuditReader(m).calls(refused=True, **kw),
            by_position, lambda r: r.requested_at),
    Listing("audit reasons",
            lambda m, **kw: ToolAuditReader(m).reasons_by_kind(["refused", "failed"], **kw),
            by_position, lambda r: r.recorded_at),
    Listing("history", lambda m, **kw: SessionHistoryReader(m).page(HISTORY, **kw),
            by_position, lambda r: r.recorded_at),
    Listing("routes", lambda m, **kw: HandoffRouteReader(m).routes(**kw), by_position,
            lambda r: r.recorded_at),
    Listing("delegations", lambda m, **kw: DelegationReader(m).delegations(now=NOW, **kw),
            by_position, lambda r: r.requested_at),
    Listing("delegations --overdue",
            lambda m, **kw: DelegationReader(m).delegations(overdue_only=True, now=NOW, **kw),
            by_position, lambda r: r.requested_at),
    Listing("subagent tasks", lambda m, **kw: SubagentTaskReader(m).tasks(**kw), by_position,
            lambda r: r.created_at),
    Listing("board tasks", lambda m, **kw: TaskBoardReader(m).tasks("team1", status="completed", **kw),
            by_position, lambda r: r.created_at),
    Listing("board", lambda m, **kw: _board_tasks(m, "team1", **kw), by_position,
            lambda r: r.created_at),
    Listing("incidents", lambda m, **kw: ActorLifecycleReader(m).incidents(**kw), by_position,
            lambda r: r.recorded_at),
    # Listings by name page by name.
    Listing("actors", lambda m, **kw: ActorLifecycleReader(m).actors(**kw),
            lambda r: r.path, lambda r: r.last_at, None),
    Listing("streams", lambda m, **kw: StreamCatalogReader(m).streams(**kw),
            lambda r: r.stream, lambda r: r.last_at, None),
    Listing("mcp servers",
            lambda m, **kw: McpHealthReader(m).servers(include_removed=True, **kw),
            lambda r: r.server, lambda r: r.since, None),
    Listing("mcp grants", lambda m, **kw: McpHealthReader(m).grants(**kw),
            lambda r: (r.server, r.scope, r.subject), None, None),
]  # fmt: skip


async def _board_tasks(models: ReadModels, team: str, **kw: Any) -> list[Any]:
    board = await TaskBoardReader(models).board(team, **kw)
    assert board is not None and board.name  # a page of a known board keeps its header
    return board.tasks


@pytest.fixture(scope="module")
def views_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pages")

    async def build() -> Path:
        async with await open_store(folder / "clawlog.db") as store:
            await write_mixed_log(store, 4000)
            await write_turns(store, HISTORY, [f"line {n}" for n in range(40)])
            for n in range(RUNNING):
                requested = DelegationRequested(
                    delegation_id=f"late-{n}", source="a", target="b", task="t", at=100.0 * n
                )
                await store.append("link/a/b", [requested], ANY, EventMetadata())
            projections = [p() for p in ALL_PROJECTIONS]
            async with ProjectionRunner(store, folder / "views.db", projections) as runner:
                await runner.catch_up()
                assert {s.status for s in runner.statuses()} == {"ok"}
        return folder / "views.db"

    return asyncio.run(build())


@pytest.fixture
async def models(views_file: Path) -> AsyncIterator[ReadModels]:
    async with ReadModels(views_file) as models:
        yield models


async def every_page(listing: Listing, models: ReadModels, size: int, **kw: Any) -> list[Any]:
    """The listing read ``size`` rows a page, each page after the last row of the one
    before."""
    rows: list[Any] = []
    cursor = listing.first
    while page := await listing.fetch(models, after=cursor, limit=size, **kw):
        assert len(page) <= size
        assert cursor is None or listing.cursor(page[0]) > cursor, "a page repeated a row"
        rows += page
        cursor = listing.cursor(page[-1])
    return rows


@pytest.mark.parametrize("listing", LISTINGS, ids=[listing.name for listing in LISTINGS])
async def test_pages_after_the_last_row_give_the_whole_listing_in_order(
    models: ReadModels, listing: Listing
) -> None:
    whole = await listing.fetch(models, limit=-1)
    size = max(1, len(whole) // 5)
    assert len(whole) >= 3 * size >= 3, "too few rows to page through"
    cursors = [listing.cursor(row) for row in whole]
    assert cursors == sorted(cursors) and len(set(cursors)) == len(cursors)
    assert await every_page(listing, models, size) == whole
    assert await listing.fetch(models, after=cursors[-1], limit=-1) == []
    assert await listing.fetch(models, after=cursors[1], limit=2) == whole[2:4]
    assert await listing.fetch(models, limit=0) == []


@pytest.mark.parametrize(
    "listing", [s for s in LISTINGS if s.time], ids=[s.name for s in LISTINGS if s.time]
)
async def test_since_keeps_exactly_the_rows_from_that_moment_on_every_page(
    models: ReadModels, listing: Listing
) -> None:
    assert listing.time is not None
    whole = await listing.fetch(models, limit=-1)
    times = sorted({t for row in whole if (t := listing.time(row)) is not None})
    assert len(times) >= 2, "too few distinct times to cut the listing"
    for moment in (times[1], times[len(times) // 2], times[-1], times[-1] + 1.0):
        expected = [r for r in whole if (t := listing.time(r)) is not None and t >= moment]
        assert await listing.fetch(models, since=moment, limit=-1) == expected
        assert await every_page(listing, models, 3, since=moment) == expected
    assert await listing.fetch(models, since=times[0], limit=-1) == [
        r for r in whole if listing.time(r) is not None
    ]


async def test_overdue_delegations_are_the_running_ones_past_their_deadline(
    models: ReadModels,
) -> None:
    overdue = await DelegationReader(models).delegations(overdue_only=True, now=NOW)
    assert [d.delegation_id for d in overdue] == [f"late-{n}" for n in range(RUNNING)]
    assert all(d.overdue and d.status == "running" for d in overdue)
    positions = [d.position for d in overdue]
    assert positions == sorted(positions)


async def test_recent_streams_page_backwards_by_their_last_position(
    models: ReadModels,
) -> None:
    catalog = StreamCatalogReader(models)
    whole = await catalog.recent(limit=-1)
    assert len(whole) > 20
    paged: list[Any] = []
    while page := await catalog.recent(before=paged[-1].last_position if paged else None, limit=7):
        assert not paged or page[0].last_position < paged[-1].last_position
        paged += page
    assert paged == whole
    moment = sorted(s.last_at for s in whole)[len(whole) // 2]
    assert await catalog.recent(since=moment, limit=-1) == [s for s in whole if s.last_at >= moment]


async def test_a_board_page_past_its_last_task_keeps_the_board_and_an_unknown_team_is_none(
    models: ReadModels,
) -> None:
    boards = TaskBoardReader(models)
    whole = await boards.board("team1")
    assert whole is not None and whole.tasks
    empty = await boards.board("team1", after=whole.tasks[-1].position)
    assert empty is not None and (empty.name, empty.tasks) == (whole.name, [])
    assert await boards.board("no-such-team") is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"after": -1}, "after=-1: pass 0 for the first page, then the last row's position"),
        ({"limit": -2}, r"limit=-2: pass a count of rows \(0 or more\), or -1 for all"),
        ({"after": 1.5}, "after=1.5"),
        ({"since": "2026-01-01"}, "since='2026-01-01': pass a moment as epoch seconds"),
    ],
)
async def test_bad_paging_arguments_are_refused_with_what_to_pass(
    models: ReadModels, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        await ToolAuditReader(models).calls(**kwargs)
    with pytest.raises(ValueError, match=message):
        await HandoffRouteReader(models).routes(**kwargs)


#: The tables a views file of the previous clawlog holds for the models whose listings
#: gained a position or a time column (their versions then).
EARLIER_TABLES = {
    ("handoff_routes", 1): """CREATE TABLE handoff_routes (
        channel TEXT NOT NULL, chat_id TEXT NOT NULL, agent TEXT NOT NULL, from_agent TEXT,
        reason TEXT, position INTEGER, PRIMARY KEY (channel, chat_id))""",
    ("delegations", 1): """CREATE TABLE delegations (
        delegation_id TEXT PRIMARY KEY, source TEXT NOT NULL, target TEXT NOT NULL,
        mode TEXT, task TEXT, status TEXT NOT NULL, reason TEXT, attempts INTEGER DEFAULT 1,
        requested_at REAL, deadline_at REAL, finished_at REAL, announced INTEGER DEFAULT 0)""",
    ("subagent_tasks", 1): """CREATE TABLE subagent_tasks (
        task_id TEXT PRIMARY KEY, agent TEXT NOT NULL, parent_session TEXT, task TEXT,
        label TEXT, depth INTEGER, mode TEXT, status TEXT NOT NULL, result TEXT, error TEXT,
        created_at REAL, finished_at REAL, archived INTEGER DEFAULT 0)""",
    ("task_boards", 2): """CREATE TABLE task_boards (
        team TEXT NOT NULL, task_id TEXT NOT NULL, subject TEXT NOT NULL, priority INTEGER,
        status TEXT NOT NULL, claimed_by TEXT, blocked_by TEXT, result TEXT, position INTEGER,
        PRIMARY KEY (team, task_id))""",
}


async def test_a_views_file_of_the_earlier_tables_is_rebuilt_to_the_new_ones(
    tmp_path: Path,
) -> None:
    views, fresh = tmp_path / "views.db", tmp_path / "fresh.db"
    async with await open_store(tmp_path / "clawlog.db") as store:
        head = await write_mixed_log(store, 1500)
        conn = sqlite3.connect(views)
        conn.execute(f"PRAGMA application_id={VIEWS_APPLICATION_ID}")
        conn.execute(CHECKPOINTS_DDL)
        for (name, version), ddl in EARLIER_TABLES.items():
            conn.execute(ddl)
            conn.execute(
                "INSERT INTO projection_checkpoints VALUES (?, ?, ?, 'ok', NULL, NULL)",
                (name, version, head),
            )
        conn.execute(
            "CREATE TABLE teams (team TEXT PRIMARY KEY, name TEXT NOT NULL, "
            "lead TEXT NOT NULL, members TEXT NOT NULL, position INTEGER NOT NULL)"
        )
        conn.commit()
        conn.close()
        projections = [p() for p in ALL_PROJECTIONS]
        async with ProjectionRunner(store, views, projections) as runner:
            assert {s.name: s.position for s in runner.statuses()}["delegations"] == 0
            assert await runner.catch_up() == head
        async with ProjectionRunner(store, fresh, projections) as runner:
            await runner.catch_up()
    assert dump_tables(views) == dump_tables(fresh)
    async with ReadModels(views) as models:
        routes = await HandoffRouteReader(models).routes(limit=3)
        assert len(routes) == 3 and all(r.recorded_at > 0 for r in routes)
        assert (await DelegationReader(models).delegations(limit=1))[0].position > 0
