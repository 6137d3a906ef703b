"""A recorded session exported as spans after the fact (``export_session``, ``clawlog
export-otel``): the tree the live run emits, with the recorded times and positions.

Sessions are recorded on a real SQLite file with scripted models; the export goes to an
SDK tracer provider of the test's own (never the global one) with an in-memory exporter.
The last tests run the same sessions live under the global SDK (``telemetry`` fixture)
and compare the two trees: names, kinds, parents, statuses and attributes.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from clawlog.actors import NothingRecorded, System, TurnCancelledError, TurnFailedError
from clawlog.actors.agents import AgentConfig, QualityGate, SubagentLimits
from clawlog.actors.errors import ModelError, ModelServerError
from clawlog.actors.mcp import McpServerConfig, mcp_servers
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, calls, reply
from clawlog.actors.replay import ExportIds, export_session, turn_trace_id
from clawlog.events import EventStore, RecordedEvent, open_store
from clawlog.events.backends.sqlite import SqliteBackend
from clawlog.events.telemetry import (
    APPROVAL_WAIT,
    CHANNEL,
    CORRELATION,
    DELEGATION,
    DELEGATION_OUTCOME,
    GEN_AI_AGENT,
    GEN_AI_CONVERSATION,
    GEN_AI_FINISH,
    GEN_AI_OPERATION,
    GEN_AI_PROVIDER,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_TOOL_CALL,
    ITERATION,
    POSITION,
    REFUSED_STEP,
    SCOPE_NAME,
    SESSION_KEY,
    STREAM,
    SUBAGENT_TASK,
    TOOL_OUTCOME,
    TURN_OUTCOME,
    TURN_RESUMED,
)
from clawlog.tools import FunctionTool
from tests.agents.support import GatedModel, wait_threading_event
from tests.agents.test_resume import kill_mid_turn
from tests.cli.damage import flip_payload_byte
from tests.cli.support import clawlog

from .conftest import Telemetry

NOTES_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "notes_server.py"


def boss(request: ModelRequest) -> ModelReply | ModelError:
    """Turn "go": four calls in one reply (one refused: no such tool), then the answer.
    Turn "explode": the model fails. As a subagent ("[parent] ...") it answers at once."""
    last = request.messages[-1]
    if last.content.startswith("[parent]"):
        return reply("4")
    if last.role == "user" and last.content == "explode":
        return ModelServerError("the provider is down")
    if last.role == "user":
        return calls(
            [
                ("sessions_list", {}),
                ("no_such_tool", {}),
                ("subagent", {"action": "run", "task": "add 2 and 2"}),
                ("delegate", {"agent": "worker", "task": "sweep the floor"}),
            ],
            ids=["c-list", "c-bad", "c-sub", "c-del"],
        )
    return reply("all done")


async def record_boss(path: Path) -> None:
    """Turn 1 with a subagent, a delegation and a refused call; turn 2 a failing model."""
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="boss"), ScriptedModel(boss))
        worker = ScriptedModel(lambda r: reply("swept"))
        await system.register_agent(AgentConfig(key="worker"), worker)
        await system.link_agents("boss", "worker")
        assert await system.send("boss", "u", "go", channel="web", chat_id="c1") == "all done"
        with pytest.raises(TurnFailedError, match="model_error"):
            await system.send("boss", "u", "explode", channel="web", chat_id="c1")


def front(request: ModelRequest) -> ModelReply:
    if not any(m.role == "tool" for m in request.messages):
        return calls([("handoff", {"agent": "billing", "reason": "invoices"})], ids=["c-h"])
    return reply("handed over")


async def record_handoff(path: Path) -> None:
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="front"), ScriptedModel(front))
        billing = ScriptedModel(lambda r: reply("billing here"))
        await system.register_agent(AgentConfig(key="billing"), billing)
        assert await system.send("front", "s", "help", channel="web", chat_id="c9") == "handed over"
        # The target's introduction turn runs after the handoff: wait for its end.
        async with system.store.subscribe(1, stream_prefix="session/billing/s") as live:
            async for recorded in live:
                if recorded.type == "session.turn_completed":
                    break


def deploys(request: ModelRequest) -> ModelReply:
    if request.messages[-1].role == "tool":
        return reply("one deployed, one denied")
    return calls(
        [("deploy", {"target": "staging"}), ("deploy", {"target": "prod"}), ("echo", {})],
        ids=["c-ok", "c-no", "c-bad-args"],
    )


async def record_approvals(path: Path) -> None:
    """A call a person allows, one they deny, one with bad arguments (refused at validation)."""

    async def deploy(ctx: object, args: dict[str, Any]) -> str:
        return f"deployed to {args['target']}"

    tool = FunctionTool(
        "deploy",
        deploy,
        description="Deploy a build",
        requires_approval=True,
        parameters={"type": "object", "properties": {"target": {"type": "string"}}},
    )
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="ops"), ScriptedModel(deploys), tools=[tool])
        turn = asyncio.ensure_future(system.send("ops", "u", "ship it"))
        waiting: set[str] = set()
        async with system.store.subscribe(1, stream_prefix="session/ops/u") as events:
            async for recorded in events:
                if recorded.type == "tool.approval_requested":
                    waiting.add(recorded.event.call_id)  # type: ignore[union-attr]
                if waiting == {"c-ok", "c-no"}:
                    break
        await system.approve("ops", "u", "c-ok", "allow-once", by="ann")
        await system.approve("ops", "u", "c-no", "deny", by="ann")
        assert await turn == "one deployed, one denied"


async def record_cancelled_turn(path: Path) -> None:
    """A turn cancelled while its model request is in flight."""
    model = GatedModel([])
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), model)
        turn = asyncio.ensure_future(system.send("main", "u", "hello"))
        await wait_threading_event(model.started)
        assert await system.cancel("main", "u")
        with pytest.raises(TurnCancelledError):
            await turn


def reads_a_note(request: ModelRequest) -> ModelReply:
    if request.messages[-1].role == "tool":
        return reply(f"tool said: {request.messages[-1].content}")
    return calls([("mcp_notes_read_note", {"name": "todo"})], ids=["c-mcp"])


async def record_mcp_call(path: Path) -> None:
    async with System.open(path) as system:
        servers = mcp_servers(system)
        config = McpServerConfig(
            name="notes", command=sys.executable, args=[str(NOTES_SERVER)], connect_timeout_s=30.0
        )
        await servers.add(config)
        await servers.grant_agent("notes", "main")
        await servers.wait_connected("notes", 30)
        agent = AgentConfig(key="main")
        gateway: Any = servers.gateway(agent)
        await system.register_agent(agent, ScriptedModel(reads_a_note), gateway=gateway)
        assert await system.send("main", "u", "my todo?") == "tool said: buy milk"


# -- helpers --------------------------------------------------------------------------------


async def exported(path: Path, agent: str, session_key: str, **turns: int) -> list[ReadableSpan]:
    """The spans of an export of the session, through a provider of the test's own."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(id_generator=ExportIds(), shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    async with await open_store(SqliteBackend(path, read_only=True)) as store:
        count = await export_session(store, agent, session_key, tracer_provider=provider, **turns)
    provider.shutdown()
    spans = list(memory.get_finished_spans())
    assert count == len(spans)
    return spans


async def read_log(path: Path) -> list[RecordedEvent]:
    async with await open_store(SqliteBackend(path, read_only=True)) as store:
        return await every_event(store)


async def every_event(store: EventStore) -> list[RecordedEvent]:
    events: list[RecordedEvent] = []
    while page := await store.read_all(len(events) + 1, 1000):
        events.extend(page)
    return events


def the(events: list[RecordedEvent], event_type: str, **fields: Any) -> RecordedEvent:
    found = [
        e
        for e in events
        if e.type == event_type and all(getattr(e.event, k, None) == v for k, v in fields.items())
    ]
    assert len(found) == 1, f"{len(found)} {event_type} events with {fields}"
    return found[0]


def ns(recorded: RecordedEvent) -> int:
    return round(recorded.recorded_at * 1e9)


def children(spans: Sequence[ReadableSpan], parent: ReadableSpan | None) -> list[ReadableSpan]:
    if parent is None:
        return [s for s in spans if s.parent is None]
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def child(spans: Sequence[ReadableSpan], parent: ReadableSpan, name: str) -> ReadableSpan:
    found = [s for s in children(spans, parent) if s.name == name]
    assert len(found) == 1, f"{len(found)} {name!r} under {parent.name!r}"
    return found[0]


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return {
        k: tuple(v) if isinstance(v, Sequence) and not isinstance(v, str) else v
        for k, v in (span.attributes or {}).items()
    }


def forest(
    spans: Sequence[ReadableSpan], *, waits: bool = False, root: ReadableSpan | None = None
) -> list[str]:
    """Every clawlog span as one line: its path from the root, kind, status, attributes,
    events (sorted: sibling spans have no order, so the lines compare as a multiset). The
    MCP SDK's own spans (its scope, not clawlog's) are no part of the comparison. With
    ``waits``, an approval wait counts as a wait: live it is measured on the process's
    clock, exported it is the time between the two recorded events. With ``root``, only
    the tree under that span (as if it had no parent)."""
    spans = [
        s for s in spans if s.instrumentation_scope and s.instrumentation_scope.name == SCOPE_NAME
    ]
    lines: list[str] = []

    def walk(span: ReadableSpan, path: str) -> None:
        here = f"{path}/{span.name}"
        status = (span.status.status_code.name, span.status.description)
        events = [e.name for e in span.events]
        found = attributes(span)
        if waits and APPROVAL_WAIT in found:
            found[APPROVAL_WAIT] = "a wait"
        lines.append(f"{here} {span.kind.name} {status} {sorted(found.items())} {events}")
        for below in children(spans, span):
            walk(below, here)

    for top in [root] if root is not None else children(spans, None):
        walk(top, "")
    return sorted(lines)


def names(spans: Sequence[ReadableSpan], span: ReadableSpan) -> tuple[Any, ...]:
    below = sorted((names(spans, c) for c in children(spans, span)), key=repr)
    return (span.name, below)


# -- the export of a recorded session -------------------------------------------------------


async def test_a_recorded_session_exports_as_the_span_tree_with_recorded_times(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.db"
    await record_boss(path)
    log = await read_log(path)
    spans = await exported(path, "boss", "u")

    first, second = (the(log, "session.turn_started", text=t) for t in ("go", "explode"))
    turn_id = first.event.turn_id  # type: ignore[union-attr]
    roots = children(spans, None)
    assert [r.name for r in roots] == ["invoke_agent boss"] * 2
    turn = next(r for r in roots if attributes(r)[CORRELATION] == turn_id)
    completed = the(log, "session.turn_completed", turn_id=turn_id)
    assert attributes(turn) == {
        GEN_AI_OPERATION: "invoke_agent",
        GEN_AI_AGENT: "boss",
        GEN_AI_CONVERSATION: "session/boss/u",
        SESSION_KEY: "u",
        CHANNEL: "web",
        CORRELATION: turn_id,
        STREAM: "session/boss/u",
        TURN_OUTCOME: "completed",
        POSITION: completed.position,
    }
    assert (turn.start_time, turn.end_time) == (ns(first), ns(completed))
    assert turn.status.status_code is StatusCode.UNSET
    # One trace per turn, its id derived from the turn id.
    assert turn.context.trace_id == turn_trace_id(turn_id)
    assert {s.context.trace_id for s in spans} == {
        turn_trace_id(turn_id),
        turn_trace_id(second.event.turn_id),  # type: ignore[union-attr]
    }

    task = the(log, "subagent.spawned")
    delegation = the(log, "delegation.requested")
    target_session = delegation.event.target_session  # type: ignore[union-attr]
    assert names(spans, turn) == (
        "invoke_agent boss",
        sorted(
            [
                ("chat scripted", []),
                ("chat scripted", []),
                ("execute_tool sessions_list", []),
                ("execute_tool no_such_tool", []),
                (
                    "execute_tool subagent",
                    [
                        (
                            "invoke_agent subagent",
                            [("invoke_agent boss", [("chat scripted", [])])],
                        )
                    ],
                ),
                (
                    "execute_tool delegate",
                    [("delegate worker", [("invoke_agent worker", [("chat scripted", [])])])],
                ),
            ],
            key=repr,
        ),
    )

    # A model request: its recorded reply, times and position.
    chat = next(c for c in children(spans, turn) if attributes(c).get(ITERATION) == 1)
    requested = the(log, "session.model_requested", turn_id=turn_id, iteration=1)
    replied = the(log, "session.model_replied", turn_id=turn_id, iteration=1)
    assert chat.kind is SpanKind.CLIENT
    assert (chat.start_time, chat.end_time) == (ns(requested), ns(replied))
    assert attributes(chat)[GEN_AI_PROVIDER] == "scripted"
    assert attributes(chat)[GEN_AI_REQUEST_MODEL] == "scripted"
    assert attributes(chat)[GEN_AI_FINISH] == ("tool_calls",)
    assert attributes(chat)[POSITION] == replied.position

    # A tool call spans its tool.* events; a refusal carries its step and is no error.
    listing = child(spans, turn, "execute_tool sessions_list")
    call_requested = the(log, "tool.call_requested", call_id="c-list")
    call_completed = the(log, "tool.call_completed", call_id="c-list")
    assert (listing.start_time, listing.end_time) == (ns(call_requested), ns(call_completed))
    assert attributes(listing)[TOOL_OUTCOME] == "completed"
    assert attributes(listing)[GEN_AI_TOOL_CALL] == "c-list"
    assert attributes(listing)[POSITION] == call_completed.position
    refused = child(spans, turn, "execute_tool no_such_tool")
    assert attributes(refused)[TOOL_OUTCOME] == "refused"
    assert attributes(refused)[REFUSED_STEP] == "resolve"
    assert attributes(refused)[POSITION] == the(log, "tool.call_refused").position
    assert refused.status.status_code is StatusCode.UNSET

    # The subagent run and the delegation lead to their own streams' events.
    run = child(spans, child(spans, turn, "execute_tool subagent"), "invoke_agent subagent")
    task_id = task.event.task_id  # type: ignore[union-attr]
    assert attributes(run)[SUBAGENT_TASK] == task_id
    assert attributes(run)[POSITION] == the(log, "subagent.finished").position
    sub_turn = child(spans, run, "invoke_agent boss")
    assert attributes(sub_turn)[STREAM] == f"subagent/{task_id}"
    delegated = child(spans, child(spans, turn, "execute_tool delegate"), "delegate worker")
    assert attributes(delegated)[DELEGATION] == delegation.event.delegation_id  # type: ignore[union-attr]
    assert attributes(delegated)[DELEGATION_OUTCOME] == "completed"
    assert attributes(delegated)[POSITION] == the(log, "delegation.completed").position
    target = child(spans, delegated, "invoke_agent worker")
    assert attributes(target)[GEN_AI_CONVERSATION] == f"session/worker/{target_session}"

    # Turn 2: the failing model call is an ERROR span with the exception event.
    failed_turn = next(r for r in roots if r is not turn)
    assert failed_turn.status.status_code is StatusCode.ERROR
    assert failed_turn.status.description == "model_error: server_error: the provider is down"
    assert attributes(failed_turn)[TURN_OUTCOME] == "failed"
    failed_chat = child(spans, failed_turn, "chat scripted")
    assert failed_chat.status.status_code is StatusCode.ERROR
    assert "the provider is down" in (failed_chat.status.description or "")
    assert attributes(failed_chat)[POSITION] == the(log, "session.model_failed").position
    [exception] = [e for e in failed_chat.events if e.name == "exception"]
    assert exception.attributes is not None
    assert exception.attributes["exception.message"] == "the provider is down"


async def test_a_re_export_gives_the_same_trace_and_span_ids(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    await record_boss(path)
    once, again = await exported(path, "boss", "u"), await exported(path, "boss", "u")

    def ids(spans: list[ReadableSpan]) -> set[tuple[int, int, int | None]]:
        return {
            (s.context.trace_id, s.context.span_id, s.parent.span_id if s.parent else None)
            for s in spans
        }

    assert ids(once) == ids(again)
    assert len({s.context.span_id for s in once}) == len(once)  # no two spans share an id


async def test_turns_are_chosen_by_number(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    await record_boss(path)
    spans = await exported(path, "boss", "u", first_turn=2)
    assert sorted(s.name for s in spans) == ["chat scripted", "invoke_agent boss"]
    spans = await exported(path, "boss", "u", first_turn=1, last_turn=1)
    assert [r.status.status_code for r in children(spans, None)] == [StatusCode.UNSET]


async def test_an_unknown_agent_or_session_says_what_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    await record_boss(path)
    provider = TracerProvider(shutdown_on_exit=False)
    async with await open_store(SqliteBackend(path, read_only=True)) as store:
        with pytest.raises(NothingRecorded, match=r"no agent 'zed' .*\(agents: boss, worker\)"):
            await export_session(store, "zed", "u", tracer_provider=provider)
        with pytest.raises(NothingRecorded, match="agent 'boss' has no such session"):
            await export_session(store, "boss", "nobody", tracer_provider=provider)
        with pytest.raises(NothingRecorded, match="no finished turn from turn 3 on"):
            await export_session(store, "boss", "u", tracer_provider=provider, first_turn=3)
        with pytest.raises(ValueError, match="first_turn counts turns from 1"):
            await export_session(store, "boss", "u", tracer_provider=provider, first_turn=0)


# -- the command ----------------------------------------------------------------------------


async def test_the_command_prints_one_json_span_per_line(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    await record_boss(path)
    done = clawlog("export-otel", "boss", "u", "--db", str(path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    spans = [json.loads(line) for line in lines]
    assert len(spans) == 15
    assert done.stderr == "clawlog: exported 15 spans of boss/u\n"
    roots = [s for s in spans if s["parent_id"] is None]
    assert sorted(s["name"] for s in roots) == ["invoke_agent boss"] * 2
    assert all(s["resource"]["attributes"]["service.name"] == "clawlog" for s in spans)
    # The same ids again: the trace of a turn can be found from its id.
    turn_ids = {s["attributes"][CORRELATION] for s in roots}
    assert {s["context"]["trace_id"] for s in roots} == {
        f"0x{turn_trace_id(t):032x}" for t in turn_ids
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["zed", "u"], "clawlog: no agent 'zed' is recorded in this log (agents: boss, worker)"),
        (["boss", "u", "--from-turn", "0"], "clawlog: --from-turn starts at 1"),
        (["boss", "u", "--otlp", "localhost"], None),
    ],
)
async def test_the_command_reports_errors_in_one_line(
    tmp_path: Path, argv: list[str], message: str | None
) -> None:
    path = tmp_path / "log.db"
    await record_boss(path)
    done = clawlog("export-otel", *argv, "--db", str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    if message is None:  # --otlp: the package to install, or what the URL should be
        try:
            import opentelemetry.exporter.otlp.proto.http  # noqa: F401
        except ImportError:
            assert "pip install opentelemetry-exporter-otlp" in done.stderr
        else:
            assert "--otlp takes a collector's http(s) URL" in done.stderr
    else:
        assert done.stderr.startswith(message)


async def test_a_damaged_log_stops_the_export_with_the_position(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    await record_boss(path)
    log = await read_log(path)
    broken = the(log, "tool.call_completed", call_id="c-list").position
    flip_payload_byte(path, broken)
    done = clawlog("export-otel", "boss", "u", "--db", str(path))
    assert done.returncode == 2, done.stderr
    assert str(broken) in done.stderr and len(done.stderr.splitlines()) == 1


# -- the export against the live run ---------------------------------------------------------


async def test_the_export_is_the_tree_the_live_run_emitted(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    path = tmp_path / "log.db"
    await record_boss(path)
    live = telemetry.spans()
    assert forest(await exported(path, "boss", "u")) == forest(live)


def delegates(request: ModelRequest) -> ModelReply:
    if not any(m.role == "tool" for m in request.messages):
        return calls([("delegate", {"agent": "worker", "task": "sweep"})], ids=["c-del"])
    return reply("delegated")


async def test_a_gated_delegation_exports_as_the_live_run_emitted_it(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    """The agent gate's review turn is the delegation's child, live and exported."""
    path = tmp_path / "log.db"
    gate = QualityGate(type="agent", agent="qa", criteria="swept")
    async with System.open(path) as system:
        config = AgentConfig(key="boss", quality_gates=[gate])
        await system.register_agent(config, ScriptedModel(delegates))
        await system.register_agent(AgentConfig(key="worker"), ScriptedModel(lambda r: reply("ok")))
        await system.register_agent(
            AgentConfig(key="qa"), ScriptedModel(lambda r: reply("APPROVED"))
        )
        await system.link_agents("boss", "worker")
        assert await system.send("boss", "u", "go") == "delegated"
    live = telemetry.spans()
    review = "/invoke_agent boss/execute_tool delegate/delegate worker/invoke_agent qa "
    assert sum(line.startswith(review) for line in forest(live)) == 1
    assert forest(await exported(path, "boss", "u")) == forest(live)


def spawns(request: ModelRequest) -> ModelReply:
    """The parent spawns a background run and answers; the run answers its task; the
    announcement turn acknowledges."""
    last = request.messages[-1]
    if last.content.startswith("[parent] "):
        return reply("counted")
    if "[subagent results" in last.content:
        return reply("noted")
    if last.role == "tool":
        return reply("spawned")
    return calls([("subagent", {"action": "spawn", "task": "count"})], ids=["c-sp"])


async def test_an_announcement_turn_links_to_the_run_it_announces_live_and_exported(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    path = tmp_path / "log.db"
    async with System.open(path) as system:
        limits = SubagentLimits(announce_debounce_s=0.05)
        await system.register_agent(
            AgentConfig(key="boss", subagents=limits), ScriptedModel(spawns)
        )
        assert await system.send("boss", "u", "go") == "spawned"
        async with system.store.subscribe(1, stream_prefix="session/boss/u") as live:
            ends = 0
            async for recorded in live:
                ends += recorded.type == "session.turn_completed"
                if ends == 2:  # the spawning turn's, then the announcement's
                    break
    live = telemetry.spans()
    spans = await exported(path, "boss", "u")
    assert forest(spans) == forest(live)

    def linked(spans: Sequence[ReadableSpan]) -> tuple[int, int]:
        """(announcement turn's link, the run's span) as positions in the turn order."""
        turns = sorted(
            (s for s in spans if s.name == "invoke_agent boss" and s.parent is None),
            key=lambda s: s.start_time or 0,
        )
        run = next(s for s in spans if s.name == "invoke_agent subagent")
        [link] = turns[1].links
        assert link.context.trace_id == turns[0].context.trace_id  # the spawning turn's trace
        return link.context.span_id, run.context.span_id

    live_link, live_run = linked(live)
    assert live_link == live_run
    exported_link, exported_run = linked(spans)
    assert exported_link == exported_run


async def test_a_handoff_exports_as_the_live_run_emitted_it(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    path = tmp_path / "log.db"
    await record_handoff(path)
    live = telemetry.spans()
    assert forest(await exported(path, "front", "s")) == forest(live)


async def test_approvals_export_as_the_live_run_emitted_them(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    path = tmp_path / "log.db"
    await record_approvals(path)
    live, export = telemetry.spans(), await exported(path, "ops", "u")
    assert forest(export, waits=True) == forest(live, waits=True)
    waits = {
        attributes(s)[GEN_AI_TOOL_CALL]: (attributes(s)[TOOL_OUTCOME], attributes(s)[APPROVAL_WAIT])
        for s in export
        if APPROVAL_WAIT in attributes(s)
    }
    log = await read_log(path)
    for call_id, outcome in (("c-ok", "completed"), ("c-no", "denied")):
        asked = the(log, "tool.approval_requested", call_id=call_id)
        decided = the(log, "tool.approval_decided", call_id=call_id)
        wait_ms = round((decided.recorded_at - asked.recorded_at) * 1000, 3)
        assert waits[call_id] == (outcome, wait_ms)


async def test_a_cancelled_turn_exports_as_the_live_run_emitted_it(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    path = tmp_path / "log.db"
    await record_cancelled_turn(path)
    live = telemetry.spans()
    assert forest(await exported(path, "main", "u")) == forest(live)


async def record_resumed_turn(path: Path) -> None:
    """A turn waiting for an approval when its System closes, resumed (and approved) by a
    System opened again on the log in the same process."""
    tool = FunctionTool(
        "deploy",
        deploy_to,
        description="Deploy a build",
        requires_approval=True,
        parameters={"type": "object", "properties": {"target": {"type": "string"}}},
    )
    system = await System.open(path)
    await system.register_agent(
        AgentConfig(key="main"), ScriptedModel(asks_to_deploy), tools=[tool]
    )
    turn = asyncio.ensure_future(system.send("main", "u", "deploy it"))
    async with system.store.subscribe(1, stream_prefix="session/main/u") as events:
        async for recorded in events:
            if recorded.type == "tool.approval_requested":
                break
    await system.close()  # the session stops during the turn
    await asyncio.gather(turn, return_exceptions=True)
    async with System.open(path) as again:
        await again.register_agent(
            AgentConfig(key="main"), ScriptedModel(asks_to_deploy), tools=[tool]
        )
        await again.approve("main", "u", "needs-ok", "allow-once")
        async with again.store.subscribe(1, stream_prefix="session/main/u") as events:
            async for recorded in events:
                if recorded.type == "session.turn_completed":
                    break


async def deploy_to(ctx: object, args: dict[str, Any]) -> str:
    return f"deployed to {args['target']}"


def asks_to_deploy(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "tool":
        return reply(f"tool said: {last.content}")
    return calls([("deploy", {"target": "prod"})], ids=["needs-ok"])


def turn_spans(spans: Sequence[ReadableSpan], agent: str) -> list[ReadableSpan]:
    """The spans of ``agent``'s turn runs, in the order they started."""
    found = [s for s in spans if s.name == f"invoke_agent {agent}"]
    return sorted(found, key=lambda s: s.start_time or 0)


async def test_a_turn_resumed_in_the_same_process_exports_as_the_live_run_emitted_it(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    """Live: an interrupted span (the run the System's close stopped), and the resumed run's
    span as its child. The export rebuilds both from the log's actor.stopped/started."""
    path = tmp_path / "log.db"
    await record_resumed_turn(path)
    live, export = telemetry.spans(), await exported(path, "main", "u")
    assert forest(export, waits=True) == forest(live, waits=True)
    interrupted, resumed = turn_spans(export, "main")
    assert attributes(interrupted)[TURN_OUTCOME] == "interrupted"
    assert interrupted.status.status_code is StatusCode.ERROR
    assert resumed.parent is not None and resumed.parent.span_id == interrupted.context.span_id
    assert attributes(resumed)[TURN_RESUMED] is True
    assert attributes(resumed)[TURN_OUTCOME] == "completed"
    # The call that waited across the stop is the resumed run's, as live (it begins again).
    assert sorted(s.name for s in children(export, resumed)) == [
        "chat scripted",
        "execute_tool deploy",
    ]
    assert [s.name for s in children(export, interrupted) if s is not resumed] == ["chat scripted"]
    [stopped, *_] = [e for e in await read_log(path) if e.type == "actor.stopped"]
    assert stopped.stream == "session/main/u"  # the session stops first
    assert interrupted.end_time == ns(stopped)


async def test_a_turn_resumed_after_a_restart_exports_the_live_tree_under_its_interrupted_run(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    """The process running the turn was killed: the log has no stop, only the next run's
    actor.started. Live, the new process's resumed span starts a trace of its own (the
    killed process's context is in no event); the export rebuilds the killed run's span,
    interrupted, with the live tree under it."""
    path = tmp_path / "log.db"
    await kill_mid_turn(path)

    async def again(ctx: object, args: dict[str, object]) -> str:
        return "ran again"

    tool = FunctionTool("wait_for_parent", again, description="waits")
    async with System.open(path) as system:
        model = ScriptedModel(lambda r: reply("resumed"))
        await system.register_agent(AgentConfig(key="main"), model, tools=[tool])
        async with system.store.subscribe(1, stream_prefix="session/main/s1") as events:
            async for recorded in events:
                if recorded.type == "session.turn_completed":
                    break
    live, export = telemetry.spans(), await exported(path, "main", "s1")
    [live_turn] = turn_spans(live, "main")
    interrupted, resumed = turn_spans(export, "main")
    assert interrupted.parent is None
    assert attributes(interrupted)[TURN_OUTCOME] == "interrupted"
    assert [c.name for c in children(export, interrupted) if c is not resumed] == ["chat scripted"]
    assert forest(export, root=resumed) == forest(live, root=live_turn)
    # The call the restart found running ends in the resumed run, live and exported.
    assert "execute_tool wait_for_parent" in [c.name for c in children(live, live_turn)]


async def test_an_mcp_call_exports_as_the_live_run_emitted_it(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    path = tmp_path / "log.db"
    await record_mcp_call(path)
    live, export = telemetry.spans(), await exported(path, "main", "u")
    assert forest(export) == forest(live)
    # Not vacuous: both lead to the log, the turn and the event that ended the call.
    completed = the(await read_log(path), "tool.call_completed", call_id="c-mcp")
    for spans in (live, export):
        [mcp] = [s for s in spans if s.name == "mcp tools/call notes"]
        assert attributes(mcp)[CORRELATION] == completed.correlation_id
        assert attributes(mcp)[POSITION] == completed.position


# -- OTLP -------------------------------------------------------------------------------------


class Collector:
    """An OTLP/HTTP trace receiver on loopback: decodes each request's spans, answers
    ``status`` (200: accepted; 400: refused, which the exporter does not retry)."""

    def __init__(self, status: int = 200) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        received: list[tuple[str, str]] = []
        self.received = received

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        received.extend((self.path, span.name) for span in scope.spans)
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


async def test_the_command_sends_the_spans_to_an_otlp_collector(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    await record_boss(path)
    printed = clawlog("export-otel", "boss", "u", "--db", str(path))
    with Collector() as collector:
        done = clawlog("export-otel", "boss", "u", "--db", str(path), "--otlp", collector.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert {where for where, _ in collector.received} == {"/v1/traces"}
    shown = sorted(json.loads(line)["name"] for line in printed.stdout.splitlines())
    assert sorted(name for _, name in collector.received) == shown


async def test_a_collector_that_refuses_the_spans_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    await record_boss(path)
    argv = ["export-otel", "boss", "u", "--db", str(path), "--otlp"]
    with Collector(status=400) as collector:
        done = clawlog(*argv, collector.url)
        verbose = clawlog(*argv, collector.url, "-v")
    assert done.returncode == 2
    assert done.stderr.startswith(f"clawlog: {collector.url}/v1/traces did not accept 15 of 15")
    assert len(done.stderr.splitlines()) == 1  # the exporter's own records: only with -v
    assert verbose.returncode == 2
    assert "opentelemetry.exporter" in verbose.stderr and "400" in verbose.stderr
