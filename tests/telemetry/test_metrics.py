"""The actors' metrics match the log: turns by outcome, model requests and their tokens,
sessions active and passivated, MCP servers by state.

Each figure is counted from the recorded events and compared with what the SDK's metric
reader collected, so a metric that drifts from the log (counted twice, missed on a path)
fails here.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from clawlog.actors import System, TurnFailedError
from clawlog.actors.agents import AgentConfig
from clawlog.actors.errors import ModelServerError
from clawlog.actors.mcp import McpServerConfig, mcp_servers
from clawlog.actors.providers import ScriptedModel, call, reply
from clawlog.events import RecordedEvent
from clawlog.events.domain.session import ModelReplied
from clawlog.events.telemetry import (
    GEN_AI_OPERATION,
    GEN_AI_PROVIDER,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_TOKEN_TYPE,
    METRIC_AGENT,
    METRIC_OUTCOME,
    METRIC_STATE,
)

from .conftest import Telemetry

NOTES_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "notes_server.py"
TURN_ENDS = {
    "session.turn_completed": "completed",
    "session.turn_failed": "failed",
    "session.turn_cancelled": "cancelled",
}


async def everything(system: System) -> list[RecordedEvent]:
    found: list[RecordedEvent] = []
    while True:
        page = await system.store.read_all(len(found) + 1, 1000)
        found.extend(page)
        if len(page) < 1000:
            return found


async def test_turn_and_model_metrics_match_the_recorded_events(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    model = ScriptedModel(
        [
            call("sessions_list"),
            reply("listed them"),
            ModelServerError("the provider is down"),
            reply("fine again today"),
        ]
    )
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        assert await system.send("main", "u", "list") == "listed them"
        try:
            await system.send("main", "v", "and now?")
        except TurnFailedError:
            pass
        else:
            raise AssertionError("the second turn should have failed")
        assert await system.send("main", "u", "again") == "fine again today"
        assert telemetry.value("clawlog.sessions.active", **{METRIC_AGENT: "main"}) == 2
        log = await everything(system)
    assert telemetry.value("clawlog.sessions.active", **{METRIC_AGENT: "main"}) == 0

    ends = Counter(TURN_ENDS[e.type] for e in log if e.type in TURN_ENDS)
    assert ends == {"completed": 2, "failed": 1}
    for outcome in ("completed", "failed", "cancelled"):
        where = {METRIC_AGENT: "main", METRIC_OUTCOME: outcome}
        assert telemetry.value("clawlog.turns", **where) == ends[outcome], outcome
        assert telemetry.value("clawlog.turn.duration", **where) == ends[outcome], outcome

    replies = [e.event for e in log if isinstance(e.event, ModelReplied)]
    failures = sum(1 for e in log if e.type == "session.model_failed")
    assert (len(replies), failures) == (3, 1)
    chat = {
        GEN_AI_OPERATION: "chat",
        GEN_AI_REQUEST_MODEL: "scripted",
        GEN_AI_PROVIDER: "scripted",
    }
    durations = telemetry.points("gen_ai.client.operation.duration")
    assert sum(p.value for p in durations) == len(replies) + failures
    assert all(dict(p.attributes).items() >= chat.items() for p in durations)
    assert (
        telemetry.value("gen_ai.client.operation.duration", **{"error.type": "server_error"}) == 1
    )
    for kind, recorded in (
        ("input", sum(r.usage.input_tokens for r in replies)),
        ("output", sum(r.usage.output_tokens for r in replies)),
    ):
        points = [
            p
            for p in telemetry.points("gen_ai.client.token.usage")
            if p.attributes.get(GEN_AI_TOKEN_TYPE) == kind
        ]
        assert points and all(dict(p.attributes).items() >= chat.items() for p in points)
        assert sum(p.value for p in points) == len(replies), kind  # one per reply
        assert sum(p.total for p in points) == recorded, kind
    # Not vacuous: "listed them", "fine again today" (5 words), and the local estimate of
    # the tool call's reply, which reported no usage.
    estimated = [r.usage.output_tokens for r in replies if r.usage.estimated]
    assert estimated and sum(r.usage.output_tokens for r in replies) == 5 + sum(estimated)


async def test_an_idle_session_passivates_and_leaves_the_active_count(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        config = AgentConfig(key="idle", idle_timeout_s=0.05)
        await system.register_agent(config, ScriptedModel(lambda r: reply("ok")))
        assert await system.send("idle", "s", "hello") == "ok"
        async with system.store.subscribe(1, stream_prefix="session/idle/s") as live:
            async for recorded in live:
                if recorded.type == "actor.stopped":
                    break
        # The session counted its passivation before recording that it stopped.
        where = {METRIC_AGENT: "idle"}
        assert telemetry.value("clawlog.sessions.passivated", **where) == 1
        assert telemetry.value("clawlog.sessions.active", **where) == 0
        assert await system.send("idle", "s", "back?") == "ok"  # recovered from its stream
        assert telemetry.value("clawlog.turns", **where) == 2


async def test_mcp_servers_are_counted_in_their_current_state(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    def by_state() -> dict[str, float]:
        points = telemetry.points("clawlog.mcp.servers")
        return {str(p.attributes[METRIC_STATE]): p.value for p in points if p.value}

    async with System.open(tmp_path / "log.db") as system:
        servers = mcp_servers(system)
        config = McpServerConfig(
            name="notes", command=sys.executable, args=[str(NOTES_SERVER)], connect_timeout_s=30.0
        )
        await servers.add(config)
        await servers.wait_connected("notes", 30)
        assert by_state() == {"connected": 1}
        assert await servers.set_enabled("notes", False)
        (status,) = await servers.status("notes")
        assert status.state == "disabled"
        assert by_state() == {"disabled": 1}
    assert by_state() == {}  # stopped with the System: counted nowhere
