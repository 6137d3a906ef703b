"""Issue 20 follow-ups in the resume path: an announcement turn resumes, an approved call
runs again without asking again, repeated call ids in one reply stay apart, and every
call a restart closes in a worker's delegated turn gets its decision.

A turn is left unfinished by a real child process (``tests.agents.resume_followups_child``)
killed with SIGKILL while its tool blocks; the test process opens the same log afterwards.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from clawlog import AgentConfig, FunctionTool, ScriptedModel, System, ToolContext, reply
from clawlog.actors.agents.call_ids import unique_call_ids
from clawlog.actors.agents.gateway import CallerContext
from clawlog.actors.agents.pipeline_gateway import PipelineGateway
from clawlog.actors.agents.resume_calls import DELEGATED_REASON, interrupt_delegated_calls
from clawlog.actors.agents.resume_delegations import (
    interrupted_delegation_reason,
    sync_delegation_target,
)
from clawlog.actors.agents.session_state import TurnState
from clawlog.actors.providers import ModelReply, ModelRequest, calls
from clawlog.actors.providers.anthropic_wire import request_body as anthropic_body
from clawlog.actors.providers.openai_wire import request_body as openai_body
from clawlog.events.domain.delegation import (
    DelegationCancelled,
    DelegationCompleted,
    DelegationFailed,
    DelegationRequested,
)
from clawlog.events.domain.session import ChatMessage, ToolCall
from clawlog.events.domain.tool import (
    ToolApprovalDecided,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallResumeDecided,
    ToolCallStarted,
)
from clawlog.tools import FunctionTool as PipelineTool
from clawlog.tools import ToolContext as PipelineContext
from clawlog.tools import ToolPipeline, ToolRegistry
from clawlog.tools.decisions import NeedsApproval, Ready
from tests.agents.exactly_once_child import lines
from tests.agents.resume_followups_child import register

PARAMS = {"type": "object", "properties": {"n": {"type": "integer"}}}
ROOT = Path(__file__).parents[2]


async def kill_when_started(scenario: str, log: Path, folder: Path) -> None:
    """Run the child's ``scenario`` until its tool started, then SIGKILL it."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.agents.resume_followups_child",
        scenario,
        str(log),
        str(folder),
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    assert child.stdout is not None
    try:
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        assert line == b"started\n", line
    finally:
        os.kill(child.pid, signal.SIGKILL)
        assert await child.wait() == -signal.SIGKILL


async def resume(log: Path, folder: Path) -> tuple[Any, list[Any]]:
    """Open the log here with tools that do not block: the resumed turn's outbox message
    and the session's events."""
    return await resume_agent(log, folder, "main")


async def resume_agent(log: Path, folder: Path, agent: str) -> tuple[Any, list[Any]]:
    """``resume`` for ``agent``'s session s1 (the other agents resume too)."""
    async with System.open(log) as system:
        async with system.outbox() as outbox:
            await register(system, folder, block=False)
            async for message in outbox:
                if message.agent == agent:
                    break
        recorded = await system.store.read_stream(f"session/{agent}/s1")
    return message, recorded


def of_type(recorded: list[Any], kind: type) -> list[Any]:
    return [r.event for r in recorded if isinstance(r.event, kind)]


async def test_an_interrupted_announcement_turn_resumes_instead_of_failing(
    tmp_path: Path,
) -> None:
    """The caller's announcement turn comes from ``delegate:{id}`` too; it is not the
    worker's delegated turn, so a restart resumes it (its call, idempotent, runs again)."""
    log = tmp_path / "log.db"
    await kill_when_started("announce", log, tmp_path)
    message, recorded = await resume(log, tmp_path)

    assert (message.kind, message.resumed, message.text) == ("delegation", True, "result: done 1")
    ends = [r.type for r in recorded if r.type in ("session.turn_completed", "session.turn_failed")]
    assert ends == ["session.turn_completed"]
    [decided] = of_type(recorded, ToolCallResumeDecided)
    assert (decided.decision, decided.side_effects) == ("rerun", "idempotent")
    assert lines(tmp_path / "keys") == [decided.idempotency_key] * 2


async def test_a_workers_delegated_turn_ends_with_a_decision_for_each_call_in_flight(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    await kill_when_started("delegated", log, tmp_path)
    async with System.open(log) as system:
        async with system.store.subscribe(1, stream_prefix="session/main/s1") as events:
            await register(system, tmp_path, block=False)
            async for seen in events:
                if seen.type == "session.turn_failed":
                    break
        recorded = await system.store.read_stream("session/main/s1")
    [decided] = of_type(recorded, ToolCallResumeDecided)
    assert (decided.call_id, decided.decision, decided.side_effects) == (
        "c1",
        "interrupted",
        "idempotent",
    )
    assert decided.reason == DELEGATED_REASON
    [failed] = of_type(recorded, ToolCallFailed)
    assert failed.error_kind == "interrupted" and DELEGATED_REASON in failed.message
    types = [r.type for r in recorded]
    assert types.index("tool.call_resume_decided") < types.index("tool.call_failed")
    assert len(lines(tmp_path / "keys")) == 1  # not run again


async def test_an_approved_call_run_again_after_a_restart_is_not_asked_again(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    await kill_when_started("approved", log, tmp_path)
    message, recorded = await resume(log, tmp_path)

    assert message.text == "result: done 1"
    assert [r.type for r in recorded].count("tool.approval_requested") == 1
    assert [(d.decision, d.by) for d in of_type(recorded, ToolApprovalDecided)] == [
        ("allow-once", "ops")
    ]
    first, again = of_type(recorded, ToolCallStarted)
    assert (first.step, first.rule, first.approved_by) == ("approval", "allow-once by ops", "ops")
    assert (again.step, again.approved_by) == ("approval", "ops")
    assert again.rule == "allow-once by ops, before a restart"
    assert lines(tmp_path / "keys") == [first.idempotency_key, again.idempotency_key]
    assert first.idempotency_key == again.idempotency_key


async def test_a_sync_delegation_a_restart_interrupted_tells_the_model_what_the_link_recorded(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    await kill_when_started("delegate", log, tmp_path)  # the worker's tool blocks
    message, recorded = await asyncio.wait_for(resume_agent(log, tmp_path, "boss"), 120)

    [decided] = of_type(recorded, ToolCallResumeDecided)
    assert (decided.call_id, decided.decision, decided.side_effects) == (
        "d1",
        "interrupted",
        "external",
    )
    assert decided.reason.startswith("interrupted by a restart before worker answered; its link")
    [failed] = of_type(recorded, ToolCallFailed)
    assert decided.reason in failed.message
    assert message.resumed and "before worker answered" in message.text
    assert "may not have finished" not in message.text


def test_the_words_for_an_interrupted_sync_delegation_follow_the_links_record() -> None:
    asked = DelegationRequested(
        delegation_id="dg-1", source="boss", target="worker", task="t", call_id="d1"
    )
    other = DelegationRequested(
        delegation_id="dg-2", source="boss", target="worker", task="t", call_id="d2"
    )
    assert interrupted_delegation_reason([other], "d1") is None  # nothing says which
    running = interrupted_delegation_reason([asked, other], "d1")
    assert running is not None and "before worker answered" in running
    done = [asked, DelegationCompleted(delegation_id="dg-1", result="42")]
    assert "after worker answered (delegation dg-1)" in str(
        interrupted_delegation_reason(done, "d1")
    )
    other_done = [asked, DelegationCompleted(delegation_id="dg-2", result="42")]
    assert "before worker answered" in str(interrupted_delegation_reason(other_done, "d1"))
    timed_out = [asked, DelegationFailed(delegation_id="dg-1", reason="timeout", message="late")]
    assert str(interrupted_delegation_reason(timed_out, "d1")).endswith("failed (timeout: late)")
    cancelled = [asked, DelegationCancelled(delegation_id="dg-1", by="boss")]
    assert "was cancelled by boss" in str(interrupted_delegation_reason(cancelled, "d1"))
    assert sync_delegation_target(ToolCall(id="d1", name="delegate", arguments='{"agent": "w"}'))
    for args in ('{"agent": "w", "mode": "async"}', '{"action": "list"}', "not json"):
        call = ToolCall(id="d1", name="delegate", arguments=args)
        assert sync_delegation_target(call) is None


def pipeline(tool: PipelineTool) -> ToolPipeline:
    return ToolPipeline(ToolRegistry([tool]))


def test_a_recorded_approval_counts_only_until_its_call_ends() -> None:
    async def deploy(ctx: Any, args: dict[str, Any]) -> str:
        return "ok"

    tools = pipeline(PipelineTool("deploy", deploy, parameters=PARAMS, requires_approval=True))
    ctx = PipelineContext(agent="main", session_key="s1", correlation_id="t1")
    assert isinstance(tools.begin(ctx, "c1", "deploy", '{"n": 1}'), NeedsApproval)
    tools.apply(
        ToolApprovalDecided(
            call_id="c1", tool="deploy", decision="allow-always", by="ann", session_key="s1"
        )
    )
    again = tools.begin(ctx, "c1", "deploy", '{"n": 1}')
    assert isinstance(again, Ready)
    assert again.events[-1].rule == "allow-always by ann, before a restart"  # type: ignore[attr-defined]
    # Another session's call with the same id was not approved.
    other = PipelineContext(agent="main", session_key="s2", correlation_id="t1")
    assert isinstance(tools.begin(other, "c1", "deploy", '{"n": 1}'), NeedsApproval)
    # Once the call ended, its id asks again (a provider reusing ids in a later turn).
    tools.apply(ToolCallCompleted(call_id="c1", tool="deploy", session_key="s1"))
    assert isinstance(tools.begin(ctx, "c1", "deploy", '{"n": 1}'), NeedsApproval)
    # A denial is never taken as an earlier approval.
    tools.apply(ToolApprovalDecided(call_id="c2", tool="deploy", decision="deny", session_key="s1"))
    assert isinstance(tools.begin(ctx, "c2", "deploy", '{"n": 1}'), NeedsApproval)


def test_repeated_and_missing_call_ids_become_unique() -> None:
    ids = unique_call_ids(["x", "x", "x_2", "", "x", "y"])
    assert ids[:3] + ids[4:] == ["x", "x_3", "x_2", "x_4", "y"]  # x_2 was the model's own
    assert ids[3].startswith("call_") and len(ids[3]) == len("call_") + 8
    assert unique_call_ids(["a", "b"]) == ["a", "b"]


async def test_one_reply_with_a_repeated_call_id_runs_both_calls_with_their_own_keys(
    tmp_path: Path,
) -> None:
    seen: list[tuple[str, int]] = []

    async def add(ctx: ToolContext, args: dict[str, Any]) -> str:
        seen.append((ctx.idempotency_key, int(args["n"])))
        return f"added {args['n']}"

    def brain(request: ModelRequest) -> ModelReply:
        if request.messages[-1].role == "user":
            return calls([("add", {"n": 1}), ("add", {"n": 2})], ids=["dup", "dup"])
        results = [m for m in request.messages if m.role == "tool"]
        return reply(" | ".join(f"{m.tool_call_id}={m.content}" for m in results))

    async with System.open(tmp_path / "log.db") as system:
        tool = FunctionTool("add", add, parameters=PARAMS, side_effects="idempotent")
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(brain), tools=[tool])
        text = await system.send("main", "s1", "add both")
        recorded = await system.store.read_stream("session/main/s1")

    assert text == "dup=added 1 | dup_2=added 2"
    assert sorted(n for _, n in seen) == [1, 2] and len({key for key, _ in seen}) == 2
    completed = of_type(recorded, ToolCallCompleted)
    assert sorted(c.call_id for c in completed) == ["dup", "dup_2"]
    # Both wire mappings send the ids back as recorded (Anthropic: [A-Za-z0-9_-] only).
    replied = next(r.event for r in recorded if r.type == "session.model_replied")
    conversation = [
        ChatMessage(role="user", content="add both"),
        ChatMessage(role="assistant", tool_calls=replied.tool_calls),
        *(
            ChatMessage(role="tool", content="ok", tool_call_id=c.call_id, name="add")
            for c in completed
        ),
    ]
    request = ModelRequest(model="m", system="", messages=conversation)
    anthropic = anthropic_body(request)["messages"]
    assert [b["id"] for b in anthropic[1]["content"]] == ["dup", "dup_2"]
    assert sorted(b["tool_use_id"] for b in anthropic[2]["content"]) == ["dup", "dup_2"]
    openai = openai_body(request)["messages"]
    assert [c["id"] for c in openai[1]["tool_calls"]] == ["dup", "dup_2"]


def test_interrupted_delegated_calls_decide_each_call_not_waiting_for_approval(
    tmp_path: Path,
) -> None:
    async def noop(ctx: Any, args: dict[str, Any]) -> str:
        return "ok"

    gateway = PipelineGateway(
        AgentConfig(key="main"),
        [PipelineTool("note", noop, parameters=PARAMS, side_effects="none")],
    )
    running = ToolCall(id="c1", name="note", arguments='{"n": 1}')
    waiting = ToolCall(id="c2", name="note", arguments='{"n": 2}')
    turn = TurnState(
        turn_id="t1",
        sender="delegate:dg-1",
        pending_calls={"c1": "note", "c2": "note", "c9": "gone"},
        awaiting_approval=["c2"],
    )
    messages = [ChatMessage(role="assistant", tool_calls=[running, waiting])]
    ctx = CallerContext(agent="main", session_key="s1", correlation_id="t1")

    events = interrupt_delegated_calls(gateway, ctx, turn, messages)

    decided = [e for e in events if isinstance(e, ToolCallResumeDecided)]
    assert [(d.call_id, d.decision, d.side_effects) for d in decided] == [
        ("c1", "interrupted", "none"),
        ("c9", "interrupted", "external"),
    ]
    failed = [e.call_id for e in events if isinstance(e, ToolCallFailed)]
    assert failed == ["c1", "c2", "c9"]
