"""The MCP health read model, as a fold of the log (what ``clawlog mcp`` shows).

    rows = await read_mcp_health(store)          # one McpServerStatus per server
    table("MCP servers", HEALTH_COLUMNS, health_rows(rows))

It reads only ``mcp/*`` streams, so it works on a live log and on an archived one; the
times come from the events' envelopes. The read model ``projections.McpHealth`` (what
``clawlog mcp`` queries) folds the same events into tables by the same rules; a test holds
its rows equal to these.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, Protocol

from clawlog.events import RecordedEvent
from clawlog.events.domain.mcp import MCP_EVENTS

from .state import McpServerState, McpServerStatus, apply_mcp_event

__all__ = ["HEALTH_COLUMNS", "fold_health", "health_rows", "read_mcp_health"]

HEALTH_COLUMNS = ("server", "state", "transport", "tools", "attempt", "since", "last error")
_PAGE = 1000


class _Reader(Protocol):
    async def read_all(
        self, from_position: int = 1, limit: int = 1000, *, stream_prefix: str | None = None
    ) -> list[RecordedEvent]: ...


def fold_health(states: dict[str, McpServerState], recorded: RecordedEvent) -> None:
    """Fold one recorded event into ``states`` (server name → state); others are ignored."""
    event = recorded.event
    if not isinstance(event, MCP_EVENTS):
        return
    server: str = event.server  # type: ignore[attr-defined]
    state = states.get(server)
    if state is None:
        state = states[server] = McpServerState(server=server)
    apply_mcp_event(state, event, recorded.recorded_at)


async def read_mcp_health(
    store: _Reader, *, include_removed: bool = False
) -> list[McpServerStatus]:
    """Every server's state, tools offered and last error, as of the end of the log."""
    states: dict[str, McpServerState] = {}
    position = 1
    while True:
        page = await store.read_all(position, _PAGE, stream_prefix="mcp/")
        for recorded in page:
            fold_health(states, recorded)
        if len(page) < _PAGE:
            break
        position = page[-1].position + 1
    return [
        McpServerStatus.of(state)
        for _, state in sorted(states.items())
        if include_removed or state.state != "removed"
    ]


def health_rows(statuses: Sequence[McpServerStatus]) -> list[list[Any]]:
    """Table rows for :data:`HEALTH_COLUMNS` (tools: offered now / discovered; the names
    are in the statuses, for ``--json``)."""
    return [
        [
            s.server,
            s.state,
            s.transport,
            f"{len(s.tools)}/{s.discovered}" + (f" ({s.skipped} skipped)" if s.skipped else ""),
            f"{s.attempt}/{s.max_attempts}" if s.attempt else "",
            _when(s.since),
            f"{s.last_error_kind}: {s.last_error} ({_when(s.last_error_at)})"
            if s.last_error
            else "",
        ]
        for s in statuses
    ]


def _when(at: float) -> str:
    if not at:
        return ""
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
