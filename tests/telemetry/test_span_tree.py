"""Live spans of the actors: one trace per turn, parent to child across actors and threads.

A multi-tool turn that runs a subagent and delegates to another agent is ONE tree: the
turn (``invoke_agent``), its model requests (``chat``), its tool calls (``execute_tool``),
under the subagent tool the run (``invoke_agent subagent``) and the subagent's own turn,
under the delegate tool the delegation (``delegate``) and the target's turn. Every span
carries the log position of the event that ended its work and the turn's correlation id,
checked here against the log itself. A failing model call is an ERROR span with the
exception; a handoff and an MCP call nest under their tool calls; the application's own
span is the parent of the turn it asks for.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from clawlog.actors import System, TurnCancelledError, TurnFailedError
from clawlog.actors.agents import AgentConfig
from clawlog.actors.errors import ModelServerError
from clawlog.actors.mcp import McpServerConfig, mcp_servers
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, calls, reply
from clawlog.events import EventMetadata, InvalidAppend, NewRecord, RecordedEvent, StoredRecord
from clawlog.events.backends.sqlite import SqliteBackend
from clawlog.events.telemetry import (
    CHANNEL,
    CORRELATION,
    DELEGATION,
    DELEGATION_OUTCOME,
    GEN_AI_AGENT,
    GEN_AI_CONVERSATION,
    GEN_AI_FINISH,
    GEN_AI_OPERATION,
    GEN_AI_OUTPUT_TOKENS,
    GEN_AI_PROVIDER,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_TOOL,
    GEN_AI_TOOL_CALL,
    ITERATION,
    MCP_SERVER,
    POSITION,
    REFUSED_STEP,
    SESSION_KEY,
    STREAM,
    SUBAGENT_TASK,
    TOOL_OUTCOME,
    TURN_OUTCOME,
)
from tests.agents.support import GatedModel, wait_threading_event

from .conftest import Telemetry

NOTES_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "notes_server.py"
#: Looks like an API key: the scrubber redacts it from everything recorded, spans too.
SECRET = "sk-" + "Zq8" * 10


def boss(request: ModelRequest) -> ModelReply:
    """Four calls in one reply (one refused: no such tool), then the answer; as a
    subagent (its task comes from "[parent]") it answers at once."""
    if request.messages[0].content.startswith("[parent]"):
        return reply("4")
    if not any(m.role == "tool" for m in request.messages):
        return calls(
            [
                ("sessions_list", {}),
                ("subagent", {"action": "run", "task": "add 2 and 2"}),
                ("delegate", {"agent": "worker", "task": "sweep the floor"}),
                ("no_such_tool", {}),
            ],
            ids=["c-list", "c-sub", "c-del", "c-bad"],
        )
    return reply("all done")


def one(spans: list[ReadableSpan], where: str) -> ReadableSpan:
    assert len(spans) == 1, f"expected one span {where}, got {[s.name for s in spans]}"
    return spans[0]


def child(telemetry: Telemetry, parent: ReadableSpan, name: str) -> ReadableSpan:
    return one(
        [s for s in telemetry.children(parent) if s.name == name], f"{name!r} under {parent.name!r}"
    )


def positions(events: list[RecordedEvent], event_type: str) -> list[int]:
    return [e.position for e in events if e.type == event_type]


async def test_a_multi_tool_turn_with_a_subagent_and_a_delegation_is_one_span_tree(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="boss"), ScriptedModel(boss))
        await system.register_agent(
            AgentConfig(key="worker"), ScriptedModel(lambda r: reply("swept"))
        )
        await system.link_agents("boss", "worker")
        assert await system.send("boss", "u", "go", channel="web", chat_id="c1") == "all done"
        session = await system.store.read_stream("session/boss/u")
        link = await system.store.read_stream("link/boss->worker")
        agent = await system.store.read_stream("agent/boss")

    turn_id = next(e.correlation_id for e in session if e.type == "session.turn_started")
    # The root: the turn, leading to its events by correlation id and position.
    turn = one([s for s in telemetry.spans() if s.parent is None], "without a parent")
    assert turn.name == "invoke_agent boss"
    assert turn.attributes is not None
    assert dict(turn.attributes) | {} == {
        GEN_AI_OPERATION: "invoke_agent",
        GEN_AI_AGENT: "boss",
        GEN_AI_CONVERSATION: "session/boss/u",
        SESSION_KEY: "u",
        CHANNEL: "web",
        CORRELATION: turn_id,
        STREAM: "session/boss/u",
        TURN_OUTCOME: "completed",
        POSITION: positions(session, "session.turn_completed")[0],
    }
    assert turn.status.status_code is StatusCode.UNSET
    # Every span is in the turn's trace: context crossed the session, the hub, the link,
    # the supervisor, the subagent and the target's session.
    assert {s.context.trace_id for s in telemetry.spans()} == {turn.context.trace_id}
    assert len(telemetry.spans()) == 13, telemetry.span_names()

    # Its direct children: two model requests and the four tool calls (siblings).
    assert sorted(s.name for s in telemetry.children(turn)) == [
        "chat scripted",
        "chat scripted",
        "execute_tool delegate",
        "execute_tool no_such_tool",
        "execute_tool sessions_list",
        "execute_tool subagent",
    ]
    chats = sorted(
        (s for s in telemetry.children(turn) if s.name == "chat scripted"),
        key=lambda s: s.attributes[ITERATION] if s.attributes else 0,
    )
    replied = positions(session, "session.model_replied")
    for iteration, (chat, position) in enumerate(zip(chats, replied, strict=True), start=1):
        assert chat.kind is SpanKind.CLIENT
        assert chat.attributes is not None
        assert chat.attributes[GEN_AI_OPERATION] == "chat"
        assert chat.attributes[GEN_AI_PROVIDER] == "scripted"
        assert chat.attributes[GEN_AI_REQUEST_MODEL] == "scripted"
        assert chat.attributes[ITERATION] == iteration
        assert chat.attributes[CORRELATION] == turn_id
        assert chat.attributes[POSITION] == position
    assert chats[0].attributes is not None and chats[1].attributes is not None
    assert tuple(chats[0].attributes[GEN_AI_FINISH]) == ("tool_calls",)  # type: ignore[arg-type]
    assert tuple(chats[1].attributes[GEN_AI_FINISH]) == ("stop",)  # type: ignore[arg-type]
    assert chats[1].attributes[GEN_AI_OUTPUT_TOKENS] == 2  # "all done"

    # Each tool call ends at the position of its last tool.* event, with the turn's
    # correlation id; a refusal is no error.
    ended = {
        e.event.call_id: e.position  # type: ignore[union-attr]
        for e in session
        if e.type in ("tool.call_completed", "tool.call_refused")
    }
    for call_id, name in [
        ("c-list", "sessions_list"),
        ("c-sub", "subagent"),
        ("c-del", "delegate"),
    ]:
        span = child(telemetry, turn, f"execute_tool {name}")
        assert span.attributes is not None
        assert span.attributes[GEN_AI_TOOL_CALL] == call_id
        assert span.attributes[TOOL_OUTCOME] == "completed"
        assert span.attributes[CORRELATION] == turn_id
        assert span.attributes[POSITION] == ended[call_id]
    refused = child(telemetry, turn, "execute_tool no_such_tool")
    assert refused.attributes is not None
    assert refused.attributes[TOOL_OUTCOME] == "refused"
    assert refused.attributes[REFUSED_STEP] == "resolve"
    assert refused.attributes[CORRELATION] == turn_id
    assert refused.attributes[POSITION] == ended["c-bad"]
    assert refused.status.status_code is StatusCode.UNSET
    # Every span, in every actor, leads to the log: a correlation id and a position.
    for span in telemetry.spans():
        assert span.attributes is not None
        assert {CORRELATION, POSITION} <= set(span.attributes), span.name

    # The subagent: tool call → run → the subagent's own turn → its model request.
    run = child(telemetry, child(telemetry, turn, "execute_tool subagent"), "invoke_agent subagent")
    task_id = next(e.event.task_id for e in agent if e.type == "subagent.finished")  # type: ignore[union-attr]
    assert run.attributes is not None
    assert run.attributes[SUBAGENT_TASK] == task_id
    assert run.attributes[CORRELATION] == turn_id
    assert run.attributes[POSITION] == positions(agent, "subagent.finished")[0]
    sub_turn = child(telemetry, run, "invoke_agent boss")
    assert sub_turn.attributes is not None
    assert sub_turn.attributes[STREAM] == f"subagent/{task_id}"
    assert sub_turn.attributes[TURN_OUTCOME] == "completed"
    assert child(telemetry, sub_turn, "chat scripted").attributes is not None

    # The delegation: tool call → delegation (on the link) → the target's turn.
    delegation = child(
        telemetry, child(telemetry, turn, "execute_tool delegate"), "delegate worker"
    )
    requested = next(e for e in link if e.type == "delegation.requested")
    assert delegation.attributes is not None
    assert delegation.attributes[DELEGATION] == requested.event.delegation_id  # type: ignore[attr-defined]
    assert delegation.attributes[DELEGATION_OUTCOME] == "completed"
    assert delegation.attributes[CORRELATION] == turn_id
    assert delegation.attributes[POSITION] == positions(link, "delegation.completed")[0]
    target = child(telemetry, delegation, "invoke_agent worker")
    target_session = requested.event.target_session  # type: ignore[attr-defined]
    assert target.attributes is not None
    assert target.attributes[GEN_AI_CONVERSATION] == f"session/worker/{target_session}"
    assert target.attributes[TURN_OUTCOME] == "completed"
    assert child(telemetry, target, "chat scripted").attributes is not None


async def test_a_failing_model_call_is_an_error_span_with_the_exception(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    model = ScriptedModel([ModelServerError(f"the provider is down (key {SECRET})")])
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        try:
            await system.send("main", "u", "hello")
        except TurnFailedError as exc:
            assert exc.reason == "model_error"
        else:
            raise AssertionError("the turn should have failed")
        session = await system.store.read_stream("session/main/u")

    chat = telemetry.span("chat scripted")
    assert chat.status.status_code is StatusCode.ERROR
    assert "the provider is down" in (chat.status.description or "")
    assert chat.attributes is not None
    assert chat.attributes[POSITION] == positions(session, "session.model_failed")[0]
    assert chat.attributes["error.type"] == "server_error"
    exception = one([e for e in chat.events if e.name == "exception"], "exception event")
    assert exception.attributes is not None
    assert exception.attributes["exception.type"] == "clawlog.actors.errors.ModelServerError"
    assert str(exception.attributes["exception.message"]).startswith("the provider is down")
    recorded_text = repr((chat.status.description, chat.attributes, exception.attributes))
    assert SECRET not in recorded_text
    turn = telemetry.span("invoke_agent main")
    assert chat.parent is not None and chat.parent.span_id == turn.context.span_id
    assert turn.status.status_code is StatusCode.ERROR
    assert turn.attributes is not None
    assert turn.attributes[TURN_OUTCOME] == "failed"
    assert turn.attributes[POSITION] == positions(session, "session.turn_failed")[0]
    assert "the provider is down" in (turn.status.description or "")
    assert SECRET not in (turn.status.description or "")


async def test_a_cancelled_turn_ends_its_span_ok_with_its_outcome(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    model = GatedModel([])
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        turn = asyncio.ensure_future(system.send("main", "u", "hello"))
        await wait_threading_event(model.started)
        assert await system.cancel("main", "u")
        try:
            await turn
        except TurnCancelledError:
            pass
        else:
            raise AssertionError("the turn should have been cancelled")
        session = await system.store.read_stream("session/main/u")

    span = telemetry.span("invoke_agent main")
    assert span.status.status_code is StatusCode.UNSET
    assert span.attributes is not None
    assert span.attributes[TURN_OUTCOME] == "cancelled"
    assert span.attributes[POSITION] == positions(session, "session.turn_cancelled")[0]
    chat = telemetry.span("chat gated")  # never answered: ended with the turn, no position
    assert chat.attributes is not None and POSITION not in chat.attributes


class RefusesTheTurnsEnd(SqliteBackend):
    """The SQLite backend, refusing the append that ends a turn (with its reply)."""

    def append(
        self,
        stream: str,
        records: Sequence[NewRecord],
        expected_version: int,
        metadata: EventMetadata,
    ) -> asyncio.Future[list[StoredRecord]]:
        if any(r.type == "session.turn_completed" for r in records):
            refused: asyncio.Future[list[StoredRecord]] = asyncio.get_running_loop().create_future()
            refused.set_exception(InvalidAppend("refused for the test"))
            return refused
        return super().append(stream, records, expected_version, metadata)


async def test_a_reply_whose_append_is_refused_still_ends_its_span(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    """A reply's span leaves the turn when the reply comes and gets its attributes when
    the reply is recorded; one never recorded ends with the turn, without a position."""
    async with System.open(RefusesTheTurnsEnd(tmp_path / "log.db")) as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel([reply("hi")]))
        try:
            await system.send("main", "u", "hello", timeout=60)
        except TurnFailedError as exc:
            assert exc.reason == "append_refused"
        else:
            raise AssertionError("the turn should have failed")
    chat = telemetry.span("chat scripted")
    assert chat.end_time is not None
    assert chat.attributes is not None and POSITION not in chat.attributes
    turn = telemetry.span("invoke_agent main")
    assert chat.parent is not None and chat.parent.span_id == turn.context.span_id


async def test_the_applications_span_is_the_parent_of_the_turn(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(lambda r: reply("hi")))
        app_tracer = trace.get_tracer("the-application")
        with app_tracer.start_as_current_span("POST /chat") as request_span:
            assert await system.send("main", "u", "hello") == "hi"
        assert await system.send("main", "u", "again") == "hi"  # no span current: a new trace

    first, second = telemetry.spans_named("invoke_agent main")
    assert first.parent is not None
    assert first.parent.span_id == request_span.get_span_context().span_id
    assert first.context.trace_id == request_span.get_span_context().trace_id
    assert second.parent is None
    assert second.context.trace_id != first.context.trace_id


def front(request: ModelRequest) -> ModelReply:
    if not any(m.role == "tool" for m in request.messages):
        return calls([("handoff", {"agent": "billing", "reason": "invoices"})], ids=["c-h"])
    return reply("handed over")


async def test_a_handoff_nests_under_its_tool_call_and_the_target_turn_under_it(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="front"), ScriptedModel(front))
        billing = ScriptedModel(lambda r: reply("billing here"))
        await system.register_agent(AgentConfig(key="billing"), billing)
        assert await system.send("front", "s", "help", channel="web", chat_id="c9") == "handed over"
        route = await system.store.read_stream("handoff/web/c9")
        # The introduction turn of billing runs after the handoff: wait for its end.
        async with system.store.subscribe(1, stream_prefix="session/billing/s") as live:
            async for recorded in live:
                if recorded.type == "session.turn_completed":
                    break

    tool = telemetry.span("execute_tool handoff")
    handoff = telemetry.span("handoff billing")
    assert handoff.parent is not None and handoff.parent.span_id == tool.context.span_id
    assert handoff.attributes is not None
    assert handoff.attributes[POSITION] == positions(route, "handoff.routed")[0]
    assert handoff.attributes[CHANNEL] == "web"
    assert handoff.attributes[STREAM] == "handoff/web/c9"
    intro = telemetry.span("invoke_agent billing")
    assert intro.parent is not None and intro.parent.span_id == handoff.context.span_id
    assert intro.context.trace_id == tool.context.trace_id


def reads_a_note(request: ModelRequest) -> ModelReply:
    if request.messages[-1].role == "tool":
        return reply(f"tool said: {request.messages[-1].content}")
    return calls([("mcp_notes_read_note", {"name": "todo"})], ids=["c-mcp"])


async def test_an_mcp_call_is_a_client_span_under_its_tool_call(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        servers = mcp_servers(system)
        await servers.add(
            McpServerConfig(
                name="notes",
                command=sys.executable,
                args=[str(NOTES_SERVER)],
                connect_timeout_s=30.0,
            )
        )
        await servers.grant_agent("notes", "main")
        await servers.wait_connected("notes", 30)
        config = AgentConfig(key="main")
        gateway: Any = servers.gateway(config)
        await system.register_agent(config, ScriptedModel(reads_a_note), gateway=gateway)
        assert await system.send("main", "u", "my todo?") == "tool said: buy milk"
        session = await system.store.read_stream("session/main/u")

    tool = telemetry.span("execute_tool mcp_notes_read_note")
    call = telemetry.span("mcp tools/call notes")
    assert call.kind is SpanKind.CLIENT
    assert call.parent is not None and call.parent.span_id == tool.context.span_id
    assert call.attributes is not None
    assert call.attributes[MCP_SERVER] == "notes"
    assert call.attributes[GEN_AI_TOOL] == "read_note"
    assert call.status.status_code is StatusCode.UNSET
    # It leads to the log as its tool call does: the turn, the event that ended the call.
    [completed] = [e for e in session if e.type == "tool.call_completed"]
    assert call.attributes[CORRELATION] == completed.correlation_id != ""
    assert call.attributes[POSITION] == completed.position
    assert tool.attributes is not None
    assert tool.attributes[CORRELATION] == completed.correlation_id
    # The request's own time: it ended when the server answered, inside its tool call.
    assert call.end_time is not None and tool.end_time is not None
    assert call.end_time <= tool.end_time
