"""Every page but the timeline: overview, sessions, boards, routes, delegations, MCP, audit.

Each page reads through the projections' readers (never folding the log itself), one
window at a time: a listing shows at most :data:`PAGE` rows and links to the next window
by the read models' own cursor (``after`` = the last row's position, or name for the
listings by name). The delegation page reads its lineage from the log
(:func:`~clawlog.projections.read_lineage`), the session page re-runs a session under a
policy change (:func:`clawlog.actors.replay.rerun`, which replays into a scratch store:
the log is never written).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import BaseRoute, Route

from clawlog.events.streams import session_stream
from clawlog.projections import (
    DelegationReader,
    HandoffRouteReader,
    McpHealthReader,
    SessionHistoryReader,
    StreamCatalogReader,
    TaskBoardReader,
    ToolAuditReader,
    read_lineage,
)

from .console import Console
from .templating import render
from .timeline_pages import natural

__all__ = ["PAGE", "routes"]

#: Rows per window of a listing.
PAGE = 100
#: Rows of each overview panel.
_OVERVIEW_ROWS = 12


async def _open(request: Request) -> tuple[Console, dict[str, Any]]:
    """The console, caught up with the log as of now, and the context every page shares:
    ``live_after``, the head the page shows the log up to (its live stream starts after
    it, so nothing appended meanwhile is missed)."""
    console: Console = request.app.state.console
    head = await console.store.head_position()
    caught_up = await console.fresh(head)
    return console, {"behind": not caught_up, "failures": console.failures(), "live_after": head}


def _after(request: Request) -> int:
    """The ``after`` cursor of a listing by position (0: the first window)."""
    return natural(request.query_params.get("after", "0")) or 0


def _text(request: Request, name: str) -> str | None:
    value = request.query_params.get(name, "").strip()
    return value or None


async def overview(request: Request) -> HTMLResponse:
    console, shared = await _open(request)
    catalog = StreamCatalogReader(console.models)
    kinds = await catalog.kinds()
    agents = await catalog.streams(kind="agent", limit=_OVERVIEW_ROWS)
    sessions = await catalog.recent(kind="session", limit=_OVERVIEW_ROWS)
    teams = await TaskBoardReader(console.models).teams()
    servers = await McpHealthReader(console.models).servers(limit=_OVERVIEW_ROWS)
    activity = await catalog.recent(limit=_OVERVIEW_ROWS)
    refusals = await ToolAuditReader(console.models).calls(refused=True, limit=_OVERVIEW_ROWS)
    return render(
        request,
        "overview.html",
        page="overview",
        title="Overview",
        head=shared["live_after"],
        kinds=kinds,
        agents=agents,
        sessions=sessions,
        teams=teams[:_OVERVIEW_ROWS],
        team_count=len(teams),
        servers=servers,
        activity=activity,
        refusals=refusals,
        db=console.config.db,
        **shared,
    )


async def sessions(request: Request) -> HTMLResponse:
    console, shared = await _open(request)
    after = _text(request, "after")
    rows = await StreamCatalogReader(console.models).streams(
        kind="session", after=after, limit=PAGE
    )
    return render(
        request,
        "sessions.html",
        page="sessions",
        title="Sessions",
        rows=[(info, *_agent_and_key(info.stream)) for info in rows],
        next_after=rows[-1].stream if len(rows) == PAGE else None,
        **shared,
    )


def _agent_and_key(stream: str) -> tuple[str, str]:
    _, agent, key = stream.split("/", 2)
    return agent, key


async def session(request: Request) -> HTMLResponse:
    console, shared = await _open(request)
    agent = request.path_params["agent"]
    key = request.path_params["key"]
    stream = session_stream(agent, key)
    after = _after(request)
    entries = await SessionHistoryReader(console.models).page(stream, after=after, limit=PAGE)
    info = await StreamCatalogReader(console.models).get(stream)
    if info is None and not entries:
        return _missing(request, shared, f"no session {key!r} for agent {agent!r} in this log")
    return render(
        request,
        "session.html",
        page="session",
        title=f"Session {agent}/{key}",
        agent=agent,
        key=key,
        stream=stream,
        info=info,
        entries=entries,
        after=after,
        next_after=entries[-1].position if len(entries) == PAGE else None,
        report=None,
        denied="",
        error=None,
        **shared,
    )


async def rerun_form(request: Request) -> HTMLResponse:
    """The re-run of a session with some tools denied: the divergence report."""
    from clawlog.actors.errors import ReplayError
    from clawlog.actors.replay import deny_tools, rerun

    console, shared = await _open(request)
    form = await request.form()
    agent = str(form.get("agent", "")).strip()
    key = str(form.get("key", "")).strip()
    denied_text = str(form.get("deny", ""))
    denied = [name.strip() for name in denied_text.replace(",", " ").split() if name.strip()]
    if not agent or not key:
        return _missing(request, shared, "the re-run form needs an agent and a session key")
    report, error = None, None
    try:
        report = await rerun(
            console.store, agent, key, config=deny_tools(*denied) if denied else None
        )
    except ReplayError as exc:
        error = f"cannot re-run {agent}/{key}: {exc}"
    stream = session_stream(agent, key)
    entries = await SessionHistoryReader(console.models).page(stream, limit=PAGE)
    shared["live_after"] = None  # a report answers a POST: there is no page to fetch again
    return render(
        request,
        "session.html",
        page="session",
        title=f"Re-run of {agent}/{key}",
        agent=agent,
        key=key,
        stream=stream,
        info=await StreamCatalogReader(console.models).get(stream),
        entries=entries,
        after=0,
        next_after=entries[-1].position if len(entries) == PAGE else None,
        report=report,
        denied=", ".join(denied),
        error=error,
        status_code=200 if error is None else 422,
        **shared,
    )


async def boards(request: Request) -> HTMLResponse:
    console, shared = await _open(request)
    teams = await TaskBoardReader(console.models).teams()
    return render(request, "boards.html", page="boards", title="Task boards", teams=teams, **shared)


async def board(request: Request) -> HTMLResponse:
    console, shared = await _open(request)
    team = request.path_params["team"]
    after = _after(request)
    reader = TaskBoardReader(console.models)
    found = await reader.board(team, after=after, limit=PAGE)
    if found is None:
        return _missing(request, shared, f"no team {team!r} in this log")
    return render(
        request,
        "board.html",
        page="board",
        title=f"Board {found.name or team}",
        board=found,
        after=after,
        next_after=found.tasks[-1].position if len(found.tasks) == PAGE else None,
        **shared,
    )


async def handoff_routes(request: Request) -> HTMLResponse:
    console, shared = await _open(request)
    after = _after(request)
    rows = await HandoffRouteReader(console.models).routes(
        channel=_text(request, "channel"), agent=_text(request, "agent"), after=after, limit=PAGE
    )
    return render(
        request,
        "routes.html",
        page="routes",
        title="Handoff routes",
        rows=rows,
        after=after,
        next_after=rows[-1].position if len(rows) == PAGE else None,
        **shared,
    )


async def delegations(request: Request) -> HTMLResponse:
    console, shared = await _open(request)
    after = _after(request)
    rows = await DelegationReader(console.models).delegations(
        source=_text(request, "source"), target=_text(request, "target"), after=after, limit=PAGE
    )
    return render(
        request,
        "delegations.html",
        page="delegations",
        title="Delegations",
        rows=rows,
        after=after,
        next_after=rows[-1].position if len(rows) == PAGE else None,
        **shared,
    )


async def delegation(request: Request) -> HTMLResponse:
    console, shared = await _open(request)
    ident = request.path_params["ident"]
    chains = await read_lineage(console.store, ident)
    if not chains:
        return _missing(request, shared, f"no delegation, subagent task or link {ident!r}")
    return render(
        request,
        "delegation.html",
        page="delegation",
        title=f"Lineage of {ident}",
        ident=ident,
        chains=chains,
        **shared,
    )


async def mcp(request: Request) -> HTMLResponse:
    console, shared = await _open(request)
    after = _text(request, "after")
    servers = await McpHealthReader(console.models).servers(
        include_removed=True, after=after, limit=PAGE
    )
    return render(
        request,
        "mcp.html",
        page="mcp",
        title="MCP health",
        servers=servers,
        next_after=servers[-1].server if len(servers) == PAGE else None,
        **shared,
    )


async def mcp_server(request: Request) -> HTMLResponse:
    console, shared = await _open(request)
    name = request.path_params["server"]
    reader = McpHealthReader(console.models)
    found = await reader.server(name)
    if found is None:
        return _missing(request, shared, f"no MCP server {name!r} in this log")
    return render(
        request,
        "mcp_server.html",
        page="mcp-server",
        title=f"MCP server {name}",
        server=found,
        tools=await reader.tools(name, limit=PAGE),
        grants=await reader.grants(name, limit=PAGE),
        **shared,
    )


async def audit(request: Request) -> HTMLResponse:
    console, shared = await _open(request)
    after = _after(request)
    tool, agent = _text(request, "tool"), _text(request, "agent")
    refused = request.query_params.get("refused") in ("1", "on", "true", "yes")
    rows = await ToolAuditReader(console.models).calls(
        tool=tool, agent=agent, refused=refused, after=after, limit=PAGE
    )
    return render(
        request,
        "audit.html",
        page="audit",
        title="Tool audit",
        rows=rows,
        tool=tool or "",
        agent=agent or "",
        refused=refused,
        after=after,
        next_after=rows[-1].position if len(rows) == PAGE else None,
        **shared,
    )


def _missing(request: Request, shared: dict[str, Any], message: str) -> HTMLResponse:
    return render(
        request,
        "missing.html",
        404,
        page="missing",
        title="Not found",
        message=message,
        **{**shared, "live_after": None},
    )


routes: list[BaseRoute] = [
    Route("/", overview, name="overview"),
    Route("/sessions", sessions, name="sessions"),
    Route("/sessions/{agent}/{key:path}", session, name="session"),
    Route("/rerun", rerun_form, methods=["POST"], name="rerun"),
    Route("/boards", boards, name="boards"),
    Route("/boards/{team}", board, name="board"),
    Route("/routes", handoff_routes, name="routes"),
    Route("/delegations", delegations, name="delegations"),
    Route("/delegations/{ident}", delegation, name="delegation"),
    Route("/mcp", mcp, name="mcp"),
    Route("/mcp/{server}", mcp_server, name="mcp_server"),
    Route("/audit", audit, name="audit"),
]
