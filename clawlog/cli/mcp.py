"""``clawlog mcp``: every MCP server's state, transport, tools and last error; with
``--server NAME`` one server with its tool list and grants. Read from the MCP health read
model (``projections.McpHealth``), caught up with the log first (see ``views.py``).

Servers are listed by name, a page at a time (``listing.py``). They keep no log position,
so ``--since`` takes a time here (in their state since then); ``--limit`` caps the servers,
or with ``--server`` its tools."""

from __future__ import annotations

from typing import Any

from clawlog.events import EventStore
from clawlog.projections import McpHealthReader
from clawlog.projections.read_models.mcp_health import McpServerHealth, McpToolRow
from clawlog.projections.timeline import Skipped

from .errors import CliError
from .listing import Format, Listing
from .points import EVERY_ROW, Window
from .render import emit_json, report_skipped, table, utc_time
from .views import read_models

__all__ = ["SERVER_COLUMNS", "TOOL_COLUMNS", "mcp", "server_row", "tool_row"]

SERVER_COLUMNS = ("server", "state", "transport", "tools", "attempt", "since", "last error")
TOOL_COLUMNS = ("tool", "server tool", "offered", "read-only", "destructive", "approval", "note")
_PAGE = 500


async def mcp(
    store: EventStore,
    *,
    server: str | None = None,
    state: str | None = None,
    include_removed: bool = False,
    form: Format = "table",
    window: Window = EVERY_ROW,
) -> None:
    """Print the servers (``state`` filters them), or one ``server`` in detail."""
    if window.since is not None and window.since.position is not None:
        raise CliError(
            "mcp --since takes a time (an ISO time or @EPOCH), not a log position: a "
            "server's row keeps the time it entered its state, not a position"
        )
    if window.since is not None and server is not None:
        raise CliError("mcp --since does not go with --server: a server's tools keep no time")
    skipped = Skipped() if window.skip_corrupt else None
    async with read_models(store, "mcp_health", skip=skipped) as views:
        health = McpHealthReader(views)
        if server is not None:
            await _one_server(health, server, form, window.limit)
        else:
            await _servers(health, state, include_removed, form, window)
    if skipped:
        report_skipped(skipped.positions, skipped.damaged)


async def _servers(
    health: McpHealthReader, state: str | None, include_removed: bool, form: Format, window: Window
) -> None:
    what = f"in state {state!r}" if state else "in this log"
    with Listing("MCP servers", SERVER_COLUMNS, form, empty=f"no MCP servers {what}") as listing:
        after, left = "", window.limit or None
        while left is None or left > 0:
            size = _PAGE if left is None else min(_PAGE, left)
            page = await health.servers(
                state=state,
                include_removed=include_removed,
                since=window.since_time,
                after=after,
                limit=size,
            )
            for found in page:
                listing.add(server_row(found), found)
            if len(page) < size:
                break
            after = page[-1].server
            left = None if left is None else left - len(page)


async def _one_server(health: McpHealthReader, server: str, form: Format, limit: int) -> None:
    found = await health.server(server)
    if found is None:
        raise CliError(f"no MCP server named {server!r} in this log")
    tools = await health.tools(server, limit=limit or -1)  # one listing: one event's worth
    grants = await health.grants(server)
    if form == "json":
        emit_json({"server": found, "tools": tools, "grants": grants})
        return
    table(f"MCP server {server}", SERVER_COLUMNS, [server_row(found)])
    table(f"tools of {server}", TOOL_COLUMNS, [tool_row(t) for t in tools])
    if grants:
        table(
            f"grants of {server}",
            ("scope", "subject", "enabled", "allow", "deny", "by"),
            [
                [
                    g.scope,
                    g.subject,
                    _flag(g.enabled),
                    _names(g.tool_allow),
                    _names(g.tool_deny),
                    g.granted_by,
                ]
                for g in grants
            ],
        )


def server_row(s: McpServerHealth) -> list[Any]:
    """``tools``: offered now / listed by the last connection (and how many skipped);
    ``attempt``: while connecting, retrying or failed. ``--json`` has the error's time."""
    tools = f"{len(s.tools)}/{s.discovered}" + (f" ({s.skipped} skipped)" if s.skipped else "")
    error = f"{s.last_error_kind}: {s.last_error}" if s.last_error else ""
    retrying = s.state in ("connecting", "reconnecting", "failed")
    attempt = f"{s.attempt}/{s.max_attempts}" if retrying and s.attempt else ""
    return [s.server, s.state, s.transport, tools, attempt, _when(s.since), error]


def tool_row(t: McpToolRow) -> list[Any]:
    return [
        t.registered_name,
        t.name,
        "yes" if t.offered else "no",
        _flag(t.read_only),
        _flag(t.destructive),
        "required" if t.requires_approval else "",
        f"skipped: {t.skipped_reason}" if t.skipped_reason else "",
    ]


def _flag(value: bool | None) -> str:
    return "" if value is None else ("yes" if value else "no")


def _names(names: list[str] | None) -> str:
    return "*" if names is None else ", ".join(names)


def _when(at: float) -> str:
    if not at:
        return ""
    return utc_time(at)
