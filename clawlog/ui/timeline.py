"""The swimlane timeline's model: which events make which items, and windows of the log.

A lane is a stream (a session, a subagent, a team, an agent, a link, an MCP connection:
each actor writes its own). An item is what a person looks for on a lane: a turn, a model
request, a tool call (its outcome: completed, refused at which step, failed, interrupted,
or still waiting), an approval and its wait, a delegation, a subagent task or a handoff
(these three with an arrow to the lane that did the work), or any other event on its own.

The page never gets the whole log: it asks for a *window*, at most ``limit`` matching
events before or after a position, and the items those events make. An item whose events
fall in two windows arrives in two pieces with the same ``key``; the page merges them
(the piece with the earliest event names the item, the latest one says how it ended). The
same model feeds the served page, its live updates and ``clawlog timeline --html``.

    found = TimelineFilter(agent="lead", types=("tool.*",))
    window = await window_before(store, found, before=None, limit=400)
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from typing import Any, cast

import msgspec

# One syntax for positions and times with the CLI's readers (``--since 1200``, an ISO
# time, ``@EPOCH``), and its binary search from a time to a position.
from clawlog.cli.points import CLOCK_SLACK_S, LogPoint, first_position_at, parse_point
from clawlog.events import EventStore, RecordedEvent, UnknownEvent
from clawlog.projections import TimelineQuery
from clawlog.projections.timeline import timeline

from .errors import BadFilter

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "Item",
    "Lane",
    "TimelineFilter",
    "Window",
    "build_window",
    "event_documents",
    "expand_types",
    "filter_params",
    "first_window",
    "parse_filter",
    "window_after",
    "window_before",
]

#: Matching events in one window unless the page asks for another number, and the most.
DEFAULT_LIMIT = 400
MAX_LIMIT = 5000
#: Positions one window request reads at most while looking for matches (a filter that
#: matches rarely must not read a big log end to end for one request).
SCAN_BUDGET = 50_000

_FAILED_MCP = frozenset({"mcp.connect_failed", "mcp.failed", "mcp.call_timed_out"})


class TimelineFilter(msgspec.Struct, frozen=True, kw_only=True):
    """Which events the timeline shows. Every filter given must match; none given = all.

    ``agent``: its streams (``session/{agent}/...``, ``agent/{agent}``) and the events
    that name it (tool calls, delegations from or to it, handoffs). ``session``: one
    stream (``session/lead/demo-user``, ``subagent/sa-1``), or every stream under a
    prefix ending in ``/``. ``types``: tags, ``tool.*`` for a family. ``since``/``until``:
    commit times in epoch seconds (``until`` exclusive)."""

    correlation: str | None = None
    agent: str | None = None
    session: str | None = None
    types: tuple[str, ...] | None = None
    since: float | None = None
    until: float | None = None
    #: Position bounds (``--since 1200``): from ``since_position`` on, before
    #: ``until_position``.
    since_position: int | None = None
    until_position: int | None = None

    def query(self) -> TimelineQuery:
        """The part of the filter the log's reader applies."""
        return TimelineQuery(
            stream_prefix=self.session,
            correlation_id=self.correlation,
            types=self.types,
            since=self.since,
            until=self.until,
        )

    def matches(self, recorded: RecordedEvent) -> bool:
        """The part :meth:`query` cannot say: an exact session, an agent."""
        if (
            self.session is not None
            and not self.session.endswith("/")
            and recorded.stream != self.session
        ):
            return False
        return self.agent is None or _concerns(recorded, self.agent)

    def is_empty(self) -> bool:
        return self == TimelineFilter()


class Lane(msgspec.Struct, frozen=True, kw_only=True):
    """One swimlane: a stream, its kind (``session``, ``subagent``, ``team``, ``agent``,
    ``link``, ``mcp``, ``handoff`` or the stream's first segment) and a short label."""

    name: str
    kind: str
    label: str


class Item(msgspec.Struct, kw_only=True):
    """One box on a lane. ``first``/``last``: the positions of its first and last event
    in this window; ``start``/``end`` their commit times. ``outcome``: completed,
    refused, failed, interrupted or waiting (None for a plain event). ``to_lane``: the
    lane an arrow points at (delegations, subagents, handoffs)."""

    key: str
    lane: str
    kind: str
    label: str
    first: int
    last: int
    start: float
    end: float
    positions: list[int]
    types: list[str]
    outcome: str | None = None
    detail: str = ""
    to_lane: str | None = None


class Window(msgspec.Struct, kw_only=True):
    """The items of the matching events with positions in ``[start, end]``; ``head`` is
    the log's last position when read. ``more_before``/``more_after``: whether earlier or
    later matches may exist. ``events``: the events' JSON by position (the static
    export only: the served page fetches them on a click)."""

    lanes: list[Lane]
    items: list[Item]
    start: int
    end: int
    head: int
    more_before: bool
    more_after: bool
    count: int
    events: dict[str, Any] | None = None


async def window_before(
    store: EventStore,
    found: TimelineFilter,
    *,
    before: int | None = None,
    limit: int = DEFAULT_LIMIT,
    documents: bool = False,
    budget: int = SCAN_BUDGET,
) -> Window:
    """The last ``limit`` matching events before position ``before`` (None: the head),
    read backwards in growing ranges, so the end of a big log costs what the window
    holds."""
    head = await store.head_position()
    top = head if before is None else min(before - 1, head)
    if found.until_position is not None:
        top = min(top, found.until_position - 1)
    floor = found.since_position or 1
    query = found.query()
    collected: list[RecordedEvent] = []
    hi, chunk, scanned = top, max(limit, 64), 0
    while hi >= floor and len(collected) < limit and scanned < budget:
        lo = max(floor, hi - chunk + 1)
        page = [e async for e in timeline(store, query, after=lo - 1, up_to=hi) if found.matches(e)]
        collected = page + collected
        scanned += hi - lo + 1
        hi, chunk = lo - 1, min(chunk * 4, SCAN_BUDGET)
    if len(collected) > limit:
        collected = collected[-limit:]
        start = collected[0].position
        more_before = True
    else:
        start, more_before = hi + 1, hi >= floor
    return build_window(
        collected,
        start=max(start, 1),
        end=max(top, 0),
        head=head,
        more_before=more_before,
        more_after=top < head and found.until_position is None,
        documents=documents,
    )


async def window_after(
    store: EventStore,
    found: TimelineFilter,
    *,
    after: int,
    limit: int = DEFAULT_LIMIT,
    up_to: int | None = None,
    documents: bool = False,
    budget: int = SCAN_BUDGET,
) -> Window:
    """The first ``limit`` matching events after position ``after`` (up to ``up_to``,
    else the head as it is now)."""
    head = await store.head_position()
    if found.since_position is not None:
        after = max(after, found.since_position - 1)
    stop = min(head, after + budget, up_to if up_to is not None else head)
    if found.until_position is not None:
        stop = min(stop, found.until_position - 1)
    collected: list[RecordedEvent] = []
    end = stop
    # An async generator (typed as an iterator): closed at once when the window is full.
    scan = cast(
        "AsyncGenerator[RecordedEvent, None]",
        timeline(store, found.query(), after=after, up_to=stop),
    )
    async with contextlib.aclosing(scan) as matching:
        async for recorded in matching:
            if found.matches(recorded):
                if len(collected) == limit:  # one more match: the window ends before it
                    end = collected[-1].position
                    break
                collected.append(recorded)
    return build_window(
        collected,
        start=after + 1,
        end=max(end, after),
        head=head,
        more_before=after > 0,
        more_after=end < head and (found.until_position is None or end < found.until_position - 1),
        documents=documents,
    )


def build_window(
    events: list[RecordedEvent],
    *,
    start: int,
    end: int,
    head: int,
    more_before: bool,
    more_after: bool,
    documents: bool = False,
) -> Window:
    """The lanes and items ``events`` (in log order) make; with ``documents``, the
    events' JSON too (a static export has no server to ask on a click)."""
    items = _Items()
    for recorded in events:
        items.add(recorded)
    return Window(
        lanes=items.lanes(),
        items=list(items.by_key.values()),
        start=start,
        end=end,
        head=head,
        more_before=more_before,
        more_after=more_after,
        count=len(events),
        events=event_documents(events) if documents else None,
    )


def event_documents(events: Iterable[RecordedEvent]) -> dict[str, Any]:
    """Each event with its envelope as plain JSON values, by position (as text)."""
    return {str(e.position): event_document(e) for e in events}


def event_document(recorded: RecordedEvent) -> dict[str, Any]:
    """An event and its envelope (position, stream, version, type, time, correlation,
    causation, actor) as plain JSON values; an unknown type's payload decoded as is."""
    document: dict[str, Any] = msgspec.to_builtins(recorded)
    if isinstance(recorded.event, UnknownEvent):
        document["event"] = {"type": recorded.type, **recorded.event.as_dict()}
    return document


def expand_types(store: EventStore, types: tuple[str, ...] | None) -> list[str] | None:
    """Tags with ``family.*`` spelled out in the store's registry (for a subscription)."""
    return None if types is None else store.registry.expand(types)


# -- which events make which items -------------------------------------------------------


def _fields(recorded: RecordedEvent) -> dict[str, Any]:
    event = recorded.event
    if isinstance(event, UnknownEvent):
        return event.as_dict()
    return {f: getattr(event, f) for f in event.__struct_fields__}


def _concerns(recorded: RecordedEvent, agent: str) -> bool:
    """Whether an event concerns ``agent``: on its streams, or naming it (read field by
    field: this runs on every event a filtered window scans)."""
    stream = recorded.stream
    if stream.startswith((f"session/{agent}/", f"link/{agent}->")) or stream in (
        f"agent/{agent}",
        f"routines/{agent}",
    ):
        return True
    if stream.startswith("link/") and stream.endswith(f"->{agent}"):
        return True
    event = recorded.event
    fields = event.as_dict() if isinstance(event, UnknownEvent) else None
    for name in _AGENT_FIELDS:
        value = fields.get(name) if fields is not None else getattr(event, name, None)
        if value == agent:
            return True
    return False


_AGENT_FIELDS = ("agent", "source", "target", "from_agent", "to_agent", "by")


def _lane_of(stream: str) -> Lane:
    kind = stream.split("/", 1)[0]
    label = stream.split("/", 1)[1] if "/" in stream else stream
    return Lane(name=stream, kind=kind, label=label)


def _short(text: str, size: int = 60) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= size else line[: size - 1] + "…"


def _session_lane(value: str) -> str | None:
    """A session named in an event, as its stream ("" or a bare key: None)."""
    if value.startswith(("session/", "subagent/")):
        return value
    return None


class _Items:
    """Items by key, in the order their first event came."""

    def __init__(self) -> None:
        self.by_key: dict[str, Item] = {}
        self._lanes: dict[str, Lane] = {}
        #: A timer id set again after it ended (a schedule's next occurrence) starts a
        #: new item: the key its later events go to.
        self._latest: dict[str, str] = {}

    def lanes(self) -> list[Lane]:
        for item in self.by_key.values():  # arrows need their target's lane drawn
            if item.to_lane is not None and item.to_lane not in self._lanes:
                self._lanes[item.to_lane] = _lane_of(item.to_lane)
        return list(self._lanes.values())

    def add(self, recorded: RecordedEvent) -> None:
        fields = _fields(recorded)
        family = recorded.type.split(".", 1)[0]
        maker = _MAKERS.get(recorded.type) or _FAMILY_MAKERS.get(family) or _plain
        key, kind, lane, label, outcome, detail, to_lane = maker(recorded, fields)
        if lane not in self._lanes:
            self._lanes[lane] = _lane_of(lane)
        base, key = key, self._latest.get(key, key)
        item = self.by_key.get(key)
        if item is not None and recorded.type == "timer.set" and item.outcome != "waiting":
            key = self._latest[base] = f"{base}@{recorded.position}"
            item = None
        if item is None:
            self.by_key[key] = Item(
                key=key,
                lane=lane,
                kind=kind,
                label=label,
                first=recorded.position,
                last=recorded.position,
                start=recorded.recorded_at,
                end=recorded.recorded_at,
                positions=[recorded.position],
                types=[recorded.type],
                outcome=outcome,
                detail=detail,
                to_lane=to_lane,
            )
            return
        item.last, item.end = recorded.position, recorded.recorded_at
        item.positions.append(recorded.position)
        if recorded.type not in item.types:
            item.types.append(recorded.type)
        if outcome != "waiting" or item.outcome is None:
            item.outcome = outcome
        if detail:
            item.detail = detail
        if to_lane is not None and item.to_lane is None:
            item.to_lane = to_lane
        if outcome == "refused" or _weak_label(item.label, kind):
            item.label = label  # "exec refused at approval" says more than "exec"


def _weak_label(label: str, kind: str) -> bool:
    return label == kind


#: What one event says about its item: key, kind, lane, label, outcome, detail, to_lane.
_Made = tuple[str, str, str, str, str | None, str, str | None]
_Maker = Callable[[RecordedEvent, dict[str, Any]], _Made]


def _plain(recorded: RecordedEvent, fields: dict[str, Any]) -> _Made:
    return f"event:{recorded.position}", "event", recorded.stream, recorded.type, None, "", None


def _turn(recorded: RecordedEvent, fields: dict[str, Any]) -> _Made:
    kind = recorded.type
    outcome, detail, label = "waiting", "", "turn"
    if kind == "session.turn_started":
        label = f"turn: {_short(fields.get('text', ''), 40)}"
        detail = f"from {fields.get('sender', 'user')}"
    elif kind == "session.turn_completed":
        outcome, detail = "completed", _short(fields.get("reply", ""), 120)
    elif kind == "session.turn_failed":
        outcome = "failed"
        detail = f"{fields.get('reason', '')}: {_short(fields.get('message', ''), 100)}"
    elif kind == "session.turn_cancelled":
        outcome, detail = "interrupted", f"cancelled by {fields.get('by', '')}"
    key = f"turn:{recorded.stream}:{fields.get('turn_id', '')}"
    return key, "turn", recorded.stream, label, outcome, detail, None


def _model(recorded: RecordedEvent, fields: dict[str, Any]) -> _Made:
    kind = recorded.type
    outcome, detail = "waiting", ""
    label = f"model {fields.get('model') or ''}".strip() if "model" in fields else "model"
    if kind == "session.model_replied":
        usage = fields.get("usage")
        tokens = getattr(usage, "output_tokens", None) if usage is not None else None
        calls = fields.get("tool_calls") or []
        detail = f"{len(calls)} tool call(s)" if calls else _short(fields.get("text", ""), 100)
        if tokens is not None:
            detail += f" · {tokens} output tokens"
        outcome, label = "completed", "model"
    elif kind == "session.model_failed":
        outcome, label = "failed", "model"
        detail = f"{fields.get('kind', '')}: {_short(fields.get('message', ''), 100)}"
    elif kind == "session.budget_exceeded":
        outcome, label = "refused", "model"
        detail = f"budget exceeded ({fields.get('scope', '')} {fields.get('metric', '')})"
    key = f"model:{recorded.stream}:{fields.get('turn_id', '')}:{fields.get('iteration', 0)}"
    return key, "model", recorded.stream, label, outcome, detail, None


def _tool(recorded: RecordedEvent, fields: dict[str, Any]) -> _Made:
    kind = recorded.type
    tool = str(fields.get("tool", "tool"))
    outcome, detail = "waiting", ""
    label = tool
    if kind == "tool.call_refused":
        outcome = "refused"
        label = f"{tool} refused at {fields.get('step', '?')}"
        detail = _short(fields.get("reason", ""), 120)
    elif kind == "tool.call_completed":
        outcome = "failed" if fields.get("is_error") else "completed"
        detail = _short(fields.get("for_llm", ""), 120)
    elif kind == "tool.call_failed":
        error = str(fields.get("error_kind", ""))
        outcome = "interrupted" if error == "interrupted" else "failed"
        detail = f"{error}: {_short(fields.get('message', ''), 100)}"
    elif kind == "tool.call_requested":
        detail = _short(msgspec.json.encode(fields.get("arguments", {})).decode(), 120)
    elif kind in ("tool.custom_defined", "tool.custom_removed", "tool.allowlist_changed"):
        return _plain(recorded, fields)
    key = f"tool:{recorded.stream}:{fields.get('call_id', recorded.position)}"
    return key, "tool", recorded.stream, label, outcome, detail, None


def _approval(recorded: RecordedEvent, fields: dict[str, Any]) -> _Made:
    tool = str(fields.get("tool", ""))
    outcome, detail = "waiting", _short(fields.get("summary", ""), 120)
    if recorded.type == "tool.approval_decided":
        decision = str(fields.get("decision", ""))
        outcome = "completed" if decision.startswith("allow") else "refused"
        detail = f"{decision} by {fields.get('by') or '?'}"
    key = f"approval:{recorded.stream}:{fields.get('call_id', '')}"
    return key, "approval", recorded.stream, f"approval {tool}", outcome, detail, None


def _delegation(recorded: RecordedEvent, fields: dict[str, Any]) -> _Made:
    kind = recorded.type
    ident = str(fields.get("delegation_id", recorded.position))
    outcome, detail, lane, to_lane = "waiting", "", recorded.stream, None
    label = "delegation"
    if kind == "delegation.requested":
        label = f"delegate → {fields.get('target', '')}"
        detail = _short(fields.get("task", ""), 120)
        lane = _session_lane(str(fields.get("source_session", ""))) or recorded.stream
        target, session = str(fields.get("target", "")), str(fields.get("target_session", ""))
        to_lane = _session_lane(session) or (
            f"session/{target}/{session}" if target and session else recorded.stream
        )
        if to_lane == lane:
            to_lane = None
    elif kind == "delegation.refused":
        label = f"delegate → {fields.get('target', '')}"
        outcome, detail = "refused", _short(fields.get("reason", ""), 120)
        return (
            f"delegation-refused:{recorded.position}",
            "delegation",
            lane,
            label,
            outcome,
            detail,
            None,
        )
    elif kind == "delegation.completed":
        outcome, detail = "completed", _short(fields.get("result", ""), 120)
    elif kind == "delegation.failed":
        outcome = "failed"
        detail = f"{fields.get('reason', '')}: {_short(fields.get('message', ''), 100)}"
    elif kind == "delegation.cancelled":
        outcome = "interrupted"
    else:
        outcome = "waiting"
    return f"delegation:{ident}", "delegation", lane, label, outcome, detail, to_lane


def _subagent(recorded: RecordedEvent, fields: dict[str, Any]) -> _Made:
    kind = recorded.type
    task_id = str(fields.get("task_id", recorded.position))
    if kind == "subagent.spawned":
        lane = _session_lane(str(fields.get("parent_session", ""))) or recorded.stream
        label = f"subagent {fields.get('label') or task_id}"
        detail = _short(fields.get("task", ""), 120)
        return (
            f"subagent:{task_id}",
            "subagent",
            lane,
            label,
            "waiting",
            detail,
            f"subagent/{task_id}",
        )
    if kind == "subagent.finished":
        status = str(fields.get("status", ""))
        outcome = {"completed": "completed", "failed": "failed"}.get(status, "interrupted")
        detail = _short(fields.get("result") or fields.get("error") or "", 120)
        return f"subagent:{task_id}", "subagent", recorded.stream, "subagent", outcome, detail, None
    if kind == "subagent.refused":
        lane = _session_lane(str(fields.get("parent_session", ""))) or recorded.stream
        detail = _short(fields.get("reason", ""), 120)
        return f"event:{recorded.position}", "subagent", lane, "subagent", "refused", detail, None
    return _plain(recorded, fields)


def _handoff(recorded: RecordedEvent, fields: dict[str, Any]) -> _Made:
    if recorded.type != "handoff.routed":
        return _plain(recorded, fields)
    source, target = str(fields.get("from_agent", "")), str(fields.get("to_agent", ""))
    key = str(fields.get("session_key", ""))
    lane = f"session/{source}/{key}" if source and key else recorded.stream
    label = f"handoff → {target}"
    detail = _short(fields.get("reason", ""), 120)
    # The conversation goes on in the target's session of the same key (System.send
    # routes the chat there); a route recorded without a key points at the agent.
    to_lane = f"session/{target}/{key}" if target and key else f"agent/{target}"
    return (
        f"event:{recorded.position}",
        "handoff",
        lane,
        label,
        "completed",
        detail,
        to_lane,
    )


def _mcp(recorded: RecordedEvent, fields: dict[str, Any]) -> _Made:
    outcome = "failed" if recorded.type in _FAILED_MCP else None
    detail = _short(fields.get("error") or fields.get("message") or "", 120)
    label = recorded.type.split(".", 1)[1].replace("_", " ")
    return f"event:{recorded.position}", "mcp", recorded.stream, label, outcome, detail, None


def _routine(recorded: RecordedEvent, fields: dict[str, Any]) -> _Made:
    """A routine's run: from the routines lane, an arrow to the session it runs in."""
    kind, name = recorded.type, str(fields.get("name", ""))
    if kind == "routine.run_started":
        agent = recorded.stream.split("/", 1)[-1]
        origin = str(fields.get("origin", "routine"))
        label = {"heartbeat": "heartbeat", "cron": f"cron {name}"}.get(origin, f"routine {name}")
        detail = f"{fields.get('trigger', '')}: {_short(fields.get('message', ''), 100)}"
        to_lane = f"session/{agent}/{fields.get('session_key', '')}"
        key = f"run:{fields.get('turn_id', recorded.position)}"
        return key, "routine", recorded.stream, label, "waiting", detail, to_lane
    if kind == "routine.run_ended":
        outcome = {"completed": "completed", "failed": "failed"}.get(
            str(fields.get("outcome", "")), "interrupted"
        )
        detail = (
            "nothing to do (quiet)"
            if fields.get("quiet")
            else _short(fields.get("message", ""), 120)
        )
        key = f"run:{fields.get('turn_id', recorded.position)}"
        return key, "routine", recorded.stream, name, outcome, detail, None
    if kind == "routine.run_skipped":
        detail = f"skipped ({fields.get('reason', '')}) on {fields.get('trigger', '')}"
        return (
            f"event:{recorded.position}",
            "routine",
            recorded.stream,
            name,
            "refused",
            detail,
            None,
        )
    return _plain(recorded, fields)


def _timer(recorded: RecordedEvent, fields: dict[str, Any]) -> _Made:
    """A durable timer on its owner's lane, from set to fired, skipped or cancelled."""
    kind, timer_id = recorded.type, str(fields.get("timer_id", ""))
    outcome, detail = "waiting", ""
    if kind in ("timer.set", "timer.moved"):
        due = fields.get("due_at")
        detail = f"due {_iso(due)}" if isinstance(due, int | float) else ""
    elif kind == "timer.fired":
        late = float(fields.get("late_s") or 0)
        outcome, detail = "completed", f"fired{f' {late:.0f} s late' if late >= 1 else ''}"
    elif kind == "timer.skipped":
        outcome, detail = "refused", "skipped: missed while nobody ran it"
    elif kind == "timer.cancelled":
        outcome, detail = "interrupted", f"cancelled: {_short(fields.get('reason', ''), 80)}"
    label = f"timer {fields.get('kind') or timer_id.split(':', 1)[0]}"
    return (
        f"timer:{recorded.stream}:{timer_id}",
        "timer",
        recorded.stream,
        label,
        outcome,
        detail,
        None,
    )


def _iso(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


_MAKERS: dict[str, _Maker] = {
    "tool.approval_requested": _approval,
    "tool.approval_decided": _approval,
    "session.budget_exceeded": _model,
}
_FAMILY_MAKERS: dict[str, _Maker] = {
    "tool": _tool,
    "delegation": _delegation,
    "subagent": _subagent,
    "handoff": _handoff,
    "mcp": _mcp,
    "routine": _routine,
    "timer": _timer,
}
for _tag in ("turn_started", "turn_completed", "turn_failed", "turn_cancelled"):
    _MAKERS[f"session.{_tag}"] = _turn
for _tag in ("model_requested", "model_replied", "model_failed"):
    _MAKERS[f"session.{_tag}"] = _model


# -- the filter as a page or the CLI gives it ----------------------------------------------


def parse_filter(params: Mapping[str, str]) -> TimelineFilter:
    """A filter from a page's query (``correlation``, ``agent``, ``session``, ``type``:
    tags separated by commas or spaces, ``since``/``until``: a position, an ISO time or
    ``@EPOCH``); a value that is not one raises :class:`BadFilter` naming it."""

    def text(name: str) -> str | None:
        value = params.get(name, "").strip()
        return value or None

    types = text("type")
    since, until = _point("since", text("since")), _point("until", text("until"))
    return TimelineFilter(
        correlation=text("correlation"),
        agent=text("agent"),
        session=text("session"),
        types=tuple(types.replace(",", " ").split()) if types else None,
        since=since.time if since else None,
        until=until.time if until else None,
        since_position=since.position if since else None,
        until_position=until.position if until else None,
    )


def filter_params(found: TimelineFilter, *, since: str = "", until: str = "") -> dict[str, str]:
    """The query parameters that give ``found`` back (``since``/``until`` as typed)."""
    params = {
        "correlation": found.correlation or "",
        "agent": found.agent or "",
        "session": found.session or "",
        "type": " ".join(found.types or ()),
        "since": since,
        "until": until,
    }
    return {k: v for k, v in params.items() if v}


def _point(name: str, value: str | None) -> LogPoint | None:
    if value is None:
        return None
    try:
        return parse_point(value)
    except argparse.ArgumentTypeError as exc:
        raise BadFilter(f"{name}: {exc}") from exc


async def first_window(
    store: EventStore,
    found: TimelineFilter,
    *,
    limit: int = DEFAULT_LIMIT,
    documents: bool = False,
    budget: int = SCAN_BUDGET,
) -> Window:
    """The window a page opens on: from ``since`` on when the filter has one, else the
    last matching events (before ``until``). A time is found by binary search, so a
    window at the end of a long log does not read it from position 1."""
    if found.since_position is not None:
        after = found.since_position - 1
        return await window_after(
            store, found, after=after, limit=limit, documents=documents, budget=budget
        )
    if found.since is not None:
        start = await first_position_at(store, found.since)
        return await window_after(
            store, found, after=start - 1, limit=limit, documents=documents, budget=budget
        )
    before = None
    if found.until is not None:  # events up to CLOCK_SLACK_S out of order still count
        before = await first_position_at(store, found.until + 2 * CLOCK_SLACK_S)
    return await window_before(
        store, found, before=before, limit=limit, documents=documents, budget=budget
    )
