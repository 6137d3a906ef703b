"""Model usage and estimated cost: one row per model call, totals per agent, session,
model and day.

Each ``session.model_replied`` becomes a row (kind ``reply``) with the tokens the provider
reported (or clawlog estimated: ``estimated``), the model and the estimated cost in US
dollars the event recorded (None for a model without a price). So does the summarizer's
call a ``session.compacted`` records (kind ``summary``, its model the summarizer's; a
compaction that only pruned made no call and has no row). The agent and session key come
from the session's ``session.started``; the model from the event, or (for replies
recorded before replies named their model) from the request before it. Totals are sums
of these rows, grouped by one of agent, session (its stream), model or UTC day, so they
always equal the sum of all the model usage the log records.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from typing import Any, ClassVar, Literal

import msgspec

from clawlog.events import RecordedEvent

from .._sql import insert_rows
from ..readers import Reader, check_page, where

__all__ = ["ModelUsage", "ModelUsageReader", "UsageBy", "UsageKind", "UsageTotal"]

#: What a row's call was: an agent's model reply, or a compaction's summary.
UsageKind = Literal["reply", "summary"]
#: What totals are grouped by: the agent, the session (its stream), the model, the UTC day.
UsageBy = Literal["agent", "session", "model", "day"]
#: The column each grouping keys on.
_KEY: dict[UsageBy, str] = {"agent": "agent", "session": "stream", "model": "model", "day": "day"}


class UsageTotal(msgspec.Struct, frozen=True):
    """The sums of the model calls of one group (``key``: an agent, a session's
    stream, a model or a ``YYYY-MM-DD`` day): replies and compaction summaries."""

    key: str
    calls: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    #: Replies whose tokens clawlog estimated (the provider reported none).
    estimated_calls: int
    #: The sum of the priced replies' estimated costs (US dollars).
    cost_usd: float
    #: Calls without a price (their cost is not in ``cost_usd``).
    unpriced_calls: int
    #: Of ``calls``, the summaries compactions wrote (``session.compacted``); their
    #: tokens and cost are in the sums too.
    summary_calls: int


_SUMS = (
    "count(*), sum(input_tokens), sum(output_tokens), sum(cached_input_tokens), "
    "sum(cache_write_tokens), sum(reasoning_tokens), sum(estimated), "
    "coalesce(sum(cost_usd), 0.0), count(*) - count(cost_usd), sum(kind = 'summary')"
)
_INSERT = (
    "INSERT INTO usage_calls (position, stream, turn_id, agent, session_key, model, day, "
    "recorded_at, input_tokens, output_tokens, cached_input_tokens, cache_write_tokens, "
    "reasoning_tokens, estimated, cost_usd, kind)"
)
_SESSION = "INSERT INTO usage_sessions (stream, agent, session_key, model)"
_SESSION_CONFLICT = (
    "ON CONFLICT (stream) DO UPDATE SET agent = coalesce(excluded.agent, usage_sessions.agent), "
    "session_key = coalesce(excluded.session_key, usage_sessions.session_key), "
    "model = coalesce(excluded.model, usage_sessions.model)"
)


class ModelUsage:
    name: ClassVar[str] = "usage"
    #: 2: compaction summaries are rows too (``kind``).
    version: ClassVar[int] = 2
    table_names: ClassVar[tuple[str, ...]] = ("usage_calls", "usage_sessions")
    tables: ClassVar[tuple[str, ...]] = (
        """CREATE TABLE IF NOT EXISTS usage_calls (
        position INTEGER PRIMARY KEY, stream TEXT NOT NULL, turn_id TEXT, agent TEXT NOT NULL,
        session_key TEXT NOT NULL, model TEXT NOT NULL, day TEXT NOT NULL,
        recorded_at REAL NOT NULL, input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL, cached_input_tokens INTEGER NOT NULL,
        cache_write_tokens INTEGER NOT NULL, reasoning_tokens INTEGER NOT NULL,
        estimated INTEGER NOT NULL, cost_usd REAL, kind TEXT NOT NULL)""",
        # One index per (filter, grouping): each totals query reads its group key's range
        # in order, so grouping needs no sort.
        "CREATE INDEX IF NOT EXISTS usage_by_agent ON usage_calls (agent, stream)",
        "CREATE INDEX IF NOT EXISTS usage_by_stream ON usage_calls (stream)",
        "CREATE INDEX IF NOT EXISTS usage_by_model ON usage_calls (model)",
        "CREATE INDEX IF NOT EXISTS usage_by_day ON usage_calls (day)",
        "CREATE INDEX IF NOT EXISTS usage_agent_model ON usage_calls (agent, model)",
        "CREATE INDEX IF NOT EXISTS usage_agent_day ON usage_calls (agent, day)",
        "CREATE INDEX IF NOT EXISTS usage_session_agent ON usage_calls (session_key, agent)",
        "CREATE INDEX IF NOT EXISTS usage_session_stream ON usage_calls (session_key, stream)",
        "CREATE INDEX IF NOT EXISTS usage_session_model ON usage_calls (session_key, model)",
        "CREATE INDEX IF NOT EXISTS usage_session_day ON usage_calls (session_key, day)",
        """CREATE TABLE IF NOT EXISTS usage_sessions (
        stream TEXT PRIMARY KEY, agent TEXT, session_key TEXT, model TEXT)""",
    )
    types: ClassVar[tuple[str, ...]] = (
        "session.compacted",
        "session.model_replied",
        "session.model_requested",
        "session.started",
    )

    def handle(self, conn: sqlite3.Connection, event: RecordedEvent) -> None:
        self.handle_batch(conn, [event])

    def handle_batch(self, conn: sqlite3.Connection, events: list[RecordedEvent]) -> None:
        """Sessions first learned in the batch are kept in a dict, so a reply finds its
        session's agent and model without a query."""
        sessions: dict[str, list[Any]] = {}
        calls: list[tuple[Any, ...]] = []
        for recorded in events:
            event: Any = recorded.event
            stream = recorded.stream
            if recorded.type == "session.started":
                self._session(conn, sessions, stream)[1:3] = [event.agent, event.session_key]
            elif recorded.type == "session.model_requested":
                self._session(conn, sessions, stream)[3] = event.model
            elif recorded.type == "session.model_replied":
                session = self._session(conn, sessions, stream)
                calls.append(self._call(recorded, event, session, "reply"))
            elif _called_a_model(event):
                session = self._session(conn, sessions, stream)
                calls.append(self._call(recorded, event, session, "summary"))
        insert_rows(conn, _SESSION, list(sessions.values()), _SESSION_CONFLICT)
        insert_rows(conn, _INSERT, calls)

    @staticmethod
    def _session(
        conn: sqlite3.Connection, sessions: dict[str, list[Any]], stream: str
    ) -> list[Any]:
        row = sessions.get(stream)
        if row is None:
            found = conn.execute(
                "SELECT stream, agent, session_key, model FROM usage_sessions WHERE stream = ?",
                (stream,),
            ).fetchone()
            row = sessions[stream] = list(found) if found else [stream, None, None, None]
        return row

    @staticmethod
    def _call(
        recorded: RecordedEvent, event: Any, session: list[Any], kind: UsageKind
    ) -> tuple[Any, ...]:
        stream = recorded.stream
        parts = stream.split("/", 2)  # session/{agent}/{key}, if no session.started was read
        agent = session[1] or (parts[1] if len(parts) == 3 else "")
        session_key = session[2] or (parts[2] if len(parts) == 3 else stream)
        usage = event.usage
        day = dt.datetime.fromtimestamp(recorded.recorded_at, dt.UTC).date().isoformat()
        return (
            recorded.position,
            stream,
            recorded.correlation_id,
            agent,
            session_key,
            event.model or session[3] or "",
            day,
            recorded.recorded_at,
            usage.input_tokens,
            usage.output_tokens,
            usage.cached_input_tokens,
            usage.cache_write_tokens,
            usage.reasoning_tokens,
            int(usage.estimated),
            event.cost_usd,
            kind,
        )


def _called_a_model(event: Any) -> bool:
    """True when a ``session.compacted`` records a summarizer's call (one that only
    pruned called no model)."""
    usage = event.usage
    return bool(event.summary or event.model or usage.input_tokens or usage.output_tokens)


class ModelUsageReader(Reader):
    """Totals of model usage and estimated cost. Pages go by group key: pass the last
    total's ``key`` as ``after`` for the next page."""

    projection: ClassVar[str] = "usage"

    async def totals(
        self,
        by: UsageBy = "agent",
        *,
        agent: str | None = None,
        session: str | None = None,
        since: float | None = None,
        from_position: int = 1,
        after: str = "",
        limit: int = 100,
    ) -> list[UsageTotal]:
        """Totals per ``by`` in key order (model replies and compaction summaries).
        ``agent`` and ``session`` (a session key) keep only their calls; ``since`` (epoch
        seconds) only those recorded at or after it, ``from_position`` those at or after
        that log position; ``limit=-1`` for all. Each grouping reads an index in key order
        (no sort)."""
        if by not in _KEY:
            raise ValueError(f"by={by!r}: group by one of {', '.join(_KEY)}")
        if not isinstance(after, str):
            raise ValueError(f"after={after!r}: pass '' for the first page, then the last key")
        check_page(max(from_position - 1, 0), limit, since)
        key = _KEY[by]
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("agent", agent), ("session_key", session)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        clauses.append(f"{key} > ?")
        params.append(after)
        if since is not None:
            clauses.append("recorded_at >= ?")
            params.append(since)
        if from_position > 1:
            clauses.append("position >= ?")
            params.append(from_position)
        rows = await self.models.query(
            f"SELECT {key}, {_SUMS} FROM usage_calls INDEXED BY {_index(by, agent, session)}"
            f"{where(clauses)} GROUP BY {key} ORDER BY {key} LIMIT ?",
            [*params, limit],
        )
        return [UsageTotal(*row) for row in rows]


def _index(by: UsageBy, agent: str | None, session: str | None) -> str:
    """The index whose order is (the filter's column, the group key)."""
    if agent is not None:
        return {
            "agent": "usage_by_agent",
            "session": "usage_by_agent",
            "model": "usage_agent_model",
            "day": "usage_agent_day",
        }[by]
    if session is not None:
        return {
            "agent": "usage_session_agent",
            "session": "usage_session_stream",
            "model": "usage_session_model",
            "day": "usage_session_day",
        }[by]
    return {
        "agent": "usage_by_agent",
        "session": "usage_by_stream",
        "model": "usage_by_model",
        "day": "usage_by_day",
    }[by]
