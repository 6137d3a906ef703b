"""Every query a reader runs is answered by an index: SQLite's own plan for it shows a
SEARCH (a range of an index), never a SCAN of a read-model table nor a temporary B-tree to
sort it, so a listing's page costs the same on a million-event log as on a small one.

The statements are the ones the readers really run: traced on the read-model connection
(``sqlite3``'s trace callback, which hands over each statement with its values bound),
then explained on the same connection.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from clawlog.events import open_store
from clawlog.projections import (
    ALL_PROJECTIONS,
    ActorLifecycleReader,
    DelegationReader,
    HandoffRouteReader,
    McpHealthReader,
    ModelUsageReader,
    ProjectionRunner,
    ReadModels,
    SessionHistoryReader,
    StreamCatalogReader,
    SubagentTaskReader,
    TaskBoardReader,
    ToolAuditReader,
)
from clawlog.projections.testing import write_mixed_log

#: A moment inside the log (its values do not change the plans: there are no statistics).
MOMENT = 1.0e9
STREAM = "session/agent1/user1"

Query = Callable[[ReadModels], Awaitable[Any]]


def _usage(by: Any, **options: Any) -> Query:
    return lambda m: ModelUsageReader(m).totals(by, **options)


#: (what it is, the reader call, the index the plan must use, or None for any SEARCH).
#: The first group is what the CLI asks: its indexes are pinned.
SHAPES: list[tuple[str, Query, str | None]] = [
    ("audit", lambda m: ToolAuditReader(m).calls(limit=1000), "INTEGER PRIMARY KEY"),
    ("audit --tool", lambda m: ToolAuditReader(m).calls(tool="exec"), "tool_audit_tool"),
    ("audit --refused", lambda m: ToolAuditReader(m).calls(refused=True), "tool_audit_refused"),
    ("audit --since", lambda m: ToolAuditReader(m).calls(since=MOMENT), "tool_audit_requested"),
    (
        "audit --refused --since",
        lambda m: ToolAuditReader(m).calls(refused=True, since=MOMENT, after=5),
        "tool_audit_refused",
    ),
    (
        "audit --tool --since",
        lambda m: ToolAuditReader(m).calls(tool="exec", since=MOMENT),
        "tool_audit_tool",
    ),
    (
        "history after a position",
        lambda m: SessionHistoryReader(m).page(STREAM, after=100),
        "session_history_stream",
    ),
    (
        "history --since",
        lambda m: SessionHistoryReader(m).page(STREAM, since=MOMENT),
        "session_history_recorded",
    ),
    (
        "delegations --overdue",
        lambda m: DelegationReader(m).delegations(overdue_only=True),
        "delegations_running",
    ),
    ("delegations", lambda m: DelegationReader(m).delegations(), "delegations_position"),
    ("mcp --state", lambda m: McpHealthReader(m).servers(state="failed"), "mcp_health_state"),
    ("mcp", lambda m: McpHealthReader(m).servers(), None),
    ("mcp --server", lambda m: McpHealthReader(m).server("server1"), None),
    ("mcp --server tools", lambda m: McpHealthReader(m).tools("server1"), "mcp_tools_order"),
    ("mcp --server grants", lambda m: McpHealthReader(m).grants("server1"), None),
    ("board", lambda m: TaskBoardReader(m).board("team1"), "task_boards_order"),
    ("routes", lambda m: HandoffRouteReader(m).routes(), "handoff_routes_position"),
    *[
        (f"usage --by {by}", _usage(by), f"usage_by_{'stream' if by == 'session' else by}")
        for by in ("agent", "session", "model", "day")
    ],
    *[
        (f"usage --agent --by {by}", _usage(by, agent="agent1"), index)
        for by, index in (
            ("agent", "usage_by_agent"),
            ("session", "usage_by_agent"),
            ("model", "usage_agent_model"),
            ("day", "usage_agent_day"),
        )
    ],
    *[
        (f"usage --session --by {by}", _usage(by, session="user1"), f"usage_session_{index}")
        for by, index in (
            ("agent", "agent"),
            ("session", "stream"),
            ("model", "model"),
            ("day", "day"),
        )
    ],
    ("usage --since", _usage("day", since=MOMENT, after="2001-01-01"), "usage_by_day"),
    # The rest of the readers' listings.
    ("audit --agent", lambda m: ToolAuditReader(m).calls(agent="agent1"), "tool_audit_agent"),
    (
        "audit by session",
        lambda m: ToolAuditReader(m).calls(session="user1"),
        "tool_audit_session",
    ),
    (
        "audit reasons of a call",
        lambda m: _reasons_of_first_call(ToolAuditReader(m)),
        "tool_audit_reasons_call",
    ),
    (
        "audit reasons by kind since",
        lambda m: ToolAuditReader(m).reasons_by_kind(["refused"], since=MOMENT),
        "tool_audit_reasons_recorded",
    ),
    ("history by kind", lambda m: SessionHistoryReader(m).page(STREAM, kinds=["user"]), None),
    (
        "delegations by source since",
        lambda m: DelegationReader(m).delegations(source="agent1", since=MOMENT),
        "delegations_source",
    ),
    (
        "delegations by target",
        lambda m: DelegationReader(m).delegations(target="agent2"),
        "delegations_target",
    ),
    ("mcp grants", lambda m: McpHealthReader(m).grants(after=("a", "b", "c")), None),
    (
        "board tasks by status since",
        lambda m: TaskBoardReader(m).tasks("team1", status="pending", since=MOMENT),
        "task_boards_order",
    ),
    ("teams", lambda m: TaskBoardReader(m).teams(), "teams_position"),
    (
        "routes by channel since",
        lambda m: HandoffRouteReader(m).routes(channel="telegram", since=MOMENT),
        "handoff_routes_channel",
    ),
    (
        "routes by agent",
        lambda m: HandoffRouteReader(m).routes(agent="agent3"),
        "handoff_routes_agent",
    ),
    ("subagent tasks", lambda m: SubagentTaskReader(m).tasks(), "subagent_tasks_position"),
    (
        "subagent tasks of an agent",
        lambda m: SubagentTaskReader(m).tasks(agent="agent1", since=1.0),
        "subagent_tasks_agent",
    ),
    ("actors", lambda m: ActorLifecycleReader(m).actors(since=MOMENT), None),
    (
        "actors by status",
        lambda m: ActorLifecycleReader(m).actors(status="failed"),
        "actor_lifecycle_status",
    ),
    (
        "incidents since",
        lambda m: ActorLifecycleReader(m).incidents(since=MOMENT),
        "actor_incidents_recorded",
    ),
    (
        "incidents of a path",
        lambda m: ActorLifecycleReader(m).incidents(path=STREAM),
        "actor_incidents_path",
    ),
    ("streams", lambda m: StreamCatalogReader(m).streams(since=MOMENT), None),
    (
        "streams of a kind",
        lambda m: StreamCatalogReader(m).streams(kind="session"),
        "stream_catalog_kind",
    ),
    ("recent streams", lambda m: StreamCatalogReader(m).recent(), "stream_catalog_recent"),
    (
        "recent streams of a kind",
        lambda m: StreamCatalogReader(m).recent(kind="team", before=500),
        "stream_catalog_kind_recent",
    ),
]


async def _reasons_of_first_call(audit: ToolAuditReader) -> Any:
    [first] = await audit.calls(limit=1)
    return await audit.reasons(first)


@pytest.fixture(scope="module")
def views(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every read model of a mixed log (made once: the plans are what is looked at)."""
    folder = tmp_path_factory.mktemp("plans")

    async def build() -> Path:
        async with await open_store(folder / "clawlog.db") as store:
            await write_mixed_log(store, 3000)
            projections = [p() for p in ALL_PROJECTIONS]
            async with ProjectionRunner(store, folder / "views.db", projections) as runner:
                await runner.catch_up()
        return folder / "views.db"

    return asyncio.run(build())


async def traced(views: Path, query: Query) -> list[tuple[str, list[str]]]:
    """Each statement ``query`` runs, with the lines of its query plan."""
    statements: list[str] = []
    async with ReadModels(views) as models:
        await models.call(sqlite3.Connection.set_trace_callback, statements.append)
        await query(models)
        await models.call(sqlite3.Connection.set_trace_callback, None)
        return [
            (sql, [row[3] for row in await models.query(f"EXPLAIN QUERY PLAN {sql}")])
            for sql in statements
        ]


@pytest.mark.parametrize(("query", "index"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
async def test_every_reader_query_is_an_index_search_in_the_listings_order(
    views: Path, query: Query, index: str | None
) -> None:
    plans = await traced(views, query)
    assert plans, "the reader ran no statement"
    for sql, plan in plans:
        shown = f"{sql}\n  " + "\n  ".join(plan)
        assert not [line for line in plan if line.startswith("SCAN")], shown
        assert not [line for line in plan if "TEMP B-TREE" in line], shown
        assert any(line.startswith("SEARCH") for line in plan), shown
    if index is not None:
        assert any(index in line for _, plan in plans for line in plan), plans


async def test_the_trace_sees_a_scan_where_there_is_one(views: Path) -> None:
    """The check above can fail: an unindexed ordering shows up as a SCAN and a sort."""

    async def unindexed(models: ReadModels) -> Any:
        return await models.query("SELECT * FROM tool_audit ORDER BY finished_at")

    [(_, plan)] = await traced(views, unindexed)
    assert any(line.startswith("SCAN tool_audit") for line in plan)
    assert any("TEMP B-TREE FOR ORDER BY" in line for line in plan)
