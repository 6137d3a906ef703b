"""Exactly-once where tools allow it: a process killed during tool calls resumes the turn;
the idempotent call runs again with the same idempotency key (its tool sees the key twice
and does the effect once), the external one is not run again and the model is told.

The first process is a real child (``tests.agents.exactly_once_child``) killed with
SIGKILL while both tools block; the test process opens the same log afterwards.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from clawlog import AgentConfig, ScriptedModel, System
from clawlog.actors.agents.gateway import CallerContext
from clawlog.actors.agents.pipeline_gateway import PipelineGateway
from clawlog.actors.agents.resume_calls import decide_resumed_calls
from clawlog.actors.agents.session_state import SessionState, TurnState, apply_session_event
from clawlog.events.domain.session import ChatMessage, ToolCall
from clawlog.events.domain.tool import (
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallResumeDecided,
    ToolCallStarted,
)
from clawlog.tools import idempotency_key
from tests.agents.exactly_once_child import brain, lines, tools

ROOT = Path(__file__).parents[2]


async def kill_when_started(mode: str, log: Path, folder: Path, names: set[str]) -> None:
    """Run the child until every tool of ``names`` printed that it started, then SIGKILL."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.agents.exactly_once_child",
        mode,
        str(log),
        str(folder),
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    assert child.stdout is not None
    try:
        started: set[str] = set()
        while started != names:
            line = await asyncio.wait_for(child.stdout.readline(), 60)
            assert line.startswith(b"started "), line
            started.add(line.decode().split()[1])
    finally:
        os.kill(child.pid, signal.SIGKILL)
        assert await child.wait() == -signal.SIGKILL


async def resume_here(log: Path, folder: Path) -> tuple[str, list[Any]]:
    """Open the log in this process with tools that do not block: the resumed turn's
    reply, and the session's events."""
    async with System.open(log) as system:
        async with system.outbox() as outbox:
            model = ScriptedModel(brain)
            tool_set = tools(folder, block=False)
            await system.register_agent(AgentConfig(key="main"), model, tools=tool_set)
            message = await asyncio.wait_for(anext(outbox), 60)
        assert (message.session_key, message.resumed) == ("s1", True)
        recorded = await system.store.read_stream("session/main/s1")
    return message.text, recorded


def of_call(recorded: list[Any], kind: type, call_id: str) -> list[Any]:
    return [r.event for r in recorded if isinstance(r.event, kind) and r.event.call_id == call_id]


async def test_an_idempotent_call_runs_again_with_its_key_and_an_external_one_is_not(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    await kill_when_started("start", log, tmp_path, {"transfer", "notify"})

    text, recorded = await resume_here(log, tmp_path)

    turn_id = recorded[-1].correlation_id
    transfer_key = idempotency_key("main", "s1", turn_id, "c1")
    notify_key = idempotency_key("main", "s1", turn_id, "c2")
    # The idempotent tool saw its key twice and did its effect once; the external one
    # ran once.
    assert sorted(lines(tmp_path / "invocations")) == sorted(
        [f"transfer {transfer_key}", f"transfer {transfer_key}", f"notify {notify_key}"]
    )
    assert sorted(lines(tmp_path / "effects")) == sorted(
        [f"transfer {transfer_key}", f"notify {notify_key}"]
    )
    # Each decision is an event, before what it decided.
    decisions = [r.event for r in recorded if isinstance(r.event, ToolCallResumeDecided)]
    assert [(d.call_id, d.decision, d.side_effects, d.attempt) for d in decisions] == [
        ("c1", "rerun", "idempotent", 1),
        ("c2", "interrupted", "external", 0),
    ]
    assert [d.idempotency_key for d in decisions] == [transfer_key, notify_key]
    types = [r.type for r in recorded]
    rerun_at = types.index("tool.call_resume_decided")
    started = [r.type == "tool.call_started" and r.event.call_id == "c1" for r in recorded]
    assert started.index(True) < rerun_at < len(started) - started[::-1].index(True) - 1
    assert [s.idempotency_key for s in of_call(recorded, ToolCallStarted, "c1")] == [
        transfer_key,
        transfer_key,
    ]
    # The re-run answered the model; the external call ended as interrupted, and the
    # model was told so.
    [completed] = of_call(recorded, ToolCallCompleted, "c1")
    assert completed.for_llm == "already moved (same key)"
    [failed] = of_call(recorded, ToolCallFailed, "c2")
    assert failed.error_kind == "interrupted"
    assert len(of_call(recorded, ToolCallStarted, "c2")) == 1
    assert "transfer: already moved (same key)" in text
    assert "notify: The notify call did not finish (interrupted by a restart" in text
    assert types[-2:] == ["session.turn_completed", "outbox.message_posted"]


async def test_a_call_killed_on_every_run_again_is_interrupted_after_two_reruns(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    await kill_when_started("start", log, tmp_path, {"transfer", "notify"})
    await kill_when_started("resume", log, tmp_path, {"transfer"})  # re-run 1
    await kill_when_started("resume", log, tmp_path, {"transfer"})  # re-run 2

    text, recorded = await resume_here(log, tmp_path)

    turn_id = recorded[-1].correlation_id
    key = idempotency_key("main", "s1", turn_id, "c1")
    assert lines(tmp_path / "invocations").count(f"transfer {key}") == 3
    assert lines(tmp_path / "effects").count(f"transfer {key}") == 1
    decided = of_call(recorded, ToolCallResumeDecided, "c1")
    assert [(d.decision, d.attempt) for d in decided] == [
        ("rerun", 1),
        ("rerun", 2),
        ("interrupted", 0),
    ]
    assert "already run again 2 times" in decided[-1].reason
    [failed] = of_call(recorded, ToolCallFailed, "c1")
    assert failed.error_kind == "interrupted" and "already run again 2 times" in failed.message
    # notify was decided once, at the first restart, and never ran again.
    assert [d.decision for d in of_call(recorded, ToolCallResumeDecided, "c2")] == ["interrupted"]
    assert "transfer: The transfer call did not finish" in text


def turn_with(calls: list[ToolCall], **turn: Any) -> tuple[TurnState, list[ChatMessage]]:
    state = TurnState(turn_id="t1", pending_calls={c.id: c.name for c in calls}, **turn)
    return state, [
        ChatMessage(role="user", content="go"),
        ChatMessage(role="assistant", tool_calls=calls),
    ]


def pipeline_gateway(folder: Path) -> PipelineGateway:
    return PipelineGateway(AgentConfig(key="main"), tools(folder, block=False))


def test_a_call_whose_arguments_lost_a_secret_or_waits_for_approval_is_not_run_again(
    tmp_path: Path,
) -> None:
    secret = ToolCall(id="c1", name="transfer", arguments='{"amount": 5, "pin": "[REDACTED]"}')
    waiting = ToolCall(id="c2", name="transfer", arguments='{"amount": 6}')
    gone = ToolCall(id="c3", name="vanished", arguments="{}")
    fine = ToolCall(id="c4", name="transfer", arguments='{"amount": 7}')
    turn, messages = turn_with([secret, waiting, gone, fine], awaiting_approval=["c2"])
    ctx = CallerContext(agent="main", session_key="s1", correlation_id="t1")

    resumed = decide_resumed_calls(pipeline_gateway(tmp_path), ctx, turn, messages)

    decided = [e for e in resumed.events if isinstance(e, ToolCallResumeDecided)]
    assert [(d.call_id, d.decision, d.side_effects) for d in decided] == [
        ("c1", "interrupted", "idempotent"),
        ("c3", "interrupted", "external"),  # the tool is gone: nobody vouches for it
        ("c4", "rerun", "idempotent"),
    ]
    assert "held a secret" in decided[0].reason
    failed = [e for e in resumed.events if isinstance(e, ToolCallFailed)]
    assert [(f.call_id, f.error_kind) for f in failed] == [
        ("c1", "interrupted"),
        ("c3", "interrupted"),
    ]
    assert resumed.rerun == [fine] and resumed.rerun_ids == {"c4"}
    assert decided[2].idempotency_key == idempotency_key("main", "s1", "t1", "c4")


def test_a_gateway_that_cannot_tell_side_effects_runs_nothing_again(tmp_path: Path) -> None:
    class Opaque:  # a ToolGateway of an embedder, written before side effects existed
        def __init__(self, inner: PipelineGateway) -> None:
            self.inner = inner

        def interrupted(self, ctx: CallerContext, call_id: str, name: str, reason: str) -> Any:
            return self.inner.interrupted(ctx, call_id, name, reason)

    turn, messages = turn_with([ToolCall(id="c1", name="transfer", arguments="{}")])
    ctx = CallerContext(agent="main", session_key="s1", correlation_id="t1")
    gateway: Any = Opaque(pipeline_gateway(tmp_path))

    resumed = decide_resumed_calls(gateway, ctx, turn, messages)

    assert resumed.rerun == []
    assert [type(e).__name__ for e in resumed.events] == ["ToolCallResumeDecided", "ToolCallFailed"]


def test_the_session_fold_counts_the_reruns_of_each_call() -> None:
    state = SessionState(turn=TurnState(turn_id="t1", pending_calls={"c1": "transfer"}))
    for attempt in (1, 2):
        rerun = ToolCallResumeDecided(
            call_id="c1", tool="transfer", decision="rerun", attempt=attempt
        )
        apply_session_event(state, rerun, lambda event: None)
    interrupted = ToolCallResumeDecided(call_id="c1", tool="transfer", decision="interrupted")
    apply_session_event(state, interrupted, lambda event: None)
    assert state.turn is not None and state.turn.reruns == {"c1": 2}


def test_a_pending_call_missing_from_the_conversation_is_interrupted_with_a_decision(
    tmp_path: Path,
) -> None:
    """Every call in flight gets its decision, even one whose asking reply is gone from
    the conversation (its arguments cannot be rebuilt, so it is not run again)."""
    kept = ToolCall(id="c1", name="transfer", arguments='{"amount": 5}')
    turn, messages = turn_with([kept])
    turn.pending_calls["c9"] = "transfer"  # asked by a reply the conversation lost
    ctx = CallerContext(agent="main", session_key="s1", correlation_id="t1")

    resumed = decide_resumed_calls(pipeline_gateway(tmp_path), ctx, turn, messages)

    decided = [e for e in resumed.events if isinstance(e, ToolCallResumeDecided)]
    assert [(d.call_id, d.decision, d.side_effects) for d in decided] == [
        ("c1", "rerun", "idempotent"),
        ("c9", "interrupted", "external"),
    ]
    assert "no longer in the conversation" in decided[1].reason
    failed = [e for e in resumed.events if isinstance(e, ToolCallFailed)]
    assert [(f.call_id, f.error_kind) for f in failed] == [("c9", "interrupted")]
    assert resumed.rerun == [kept]
    # Without any reply at all, every pending call is decided the same way.
    alone = decide_resumed_calls(pipeline_gateway(tmp_path), ctx, turn, messages[:1])
    assert [e.call_id for e in alone.events if isinstance(e, ToolCallResumeDecided)] == [
        "c1",
        "c9",
    ]
    assert alone.rerun == []
