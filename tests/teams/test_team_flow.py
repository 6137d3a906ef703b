"""A scripted lead and two teammates finish a five-task board end to end."""

from __future__ import annotations

import re
from pathlib import Path

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, calls, reply


def lead_brain(request: ModelRequest) -> ModelReply:
    messages = request.messages
    last = messages[-1]
    if last.role == "user" and last.content.startswith("[teammate:"):
        done = sum(1 for m in messages if m.role == "user" and m.content.startswith("[teammate:"))
        return reply("release done" if done == 5 else f"noted ({done}/5)")
    created = re.findall(
        r"created (t\d+-\w+)", " ".join(m.content for m in messages if m.role == "tool")
    )
    if not created:
        return calls(
            [
                ("team_tasks", {"action": "create", "subject": "write changelog", "priority": 2}),
                ("team_tasks", {"action": "create", "subject": "run tests", "priority": 3}),
            ]
        )
    if len(created) == 2:
        first, second = created
        return calls(
            [
                (
                    "team_tasks",
                    {"action": "create", "subject": "tag release", "blocked_by": [first, second]},
                ),
                ("team_tasks", {"action": "create", "subject": "update docs", "priority": 1}),
                ("team_tasks", {"action": "create", "subject": "announce", "blocked_by": [first]}),
            ]
        )
    return reply("posted 5 tasks")


def teammate_brain(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "user":
        task_id = re.search(r"task (t\d+-\w+)", last.content)
        if task_id is None:
            return reply("ok")
        return call("team_tasks", action="claim", task_id=task_id.group(1))
    if "you claimed" in last.content:
        task_id = re.search(r"claimed (t\d+-\w+)", last.content).group(1)  # type: ignore[union-attr]
        return call("team_tasks", action="complete", task_id=task_id, result=f"{task_id} finished")
    return reply("done" if "completed" in last.content else "someone else has it")


async def test_lead_and_two_teammates_finish_five_tasks(tmp_path: Path) -> None:
    lead_model = ScriptedModel(lead_brain)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="lead"), lead_model)
        dev_model, qa_model = ScriptedModel(teammate_brain), ScriptedModel(teammate_brain)
        await system.register_agent(AgentConfig(key="dev"), dev_model)
        await system.register_agent(AgentConfig(key="qa"), qa_model)
        await system.create_team(
            "rel", name="Release", lead="lead", members=[("dev", "developer"), ("qa", "tester")]
        )
        assert await system.send("lead", "boss", "ship the release") == "posted 5 tasks"
        assert "## TEAM.md" in lead_model.requests[0].system
        assert "- dev: developer" in lead_model.requests[0].system
        async with system.store.subscribe(1, stream_prefix="session/lead/boss") as events:
            async for recorded in events:
                if (
                    recorded.type == "session.turn_completed"
                    and recorded.event.reply == "release done"
                ):  # type: ignore[union-attr]
                    break
        board = await system.team_board("rel")
        assert [t.status for t in board.tasks] == ["completed"] * 5
        assert {t.claimed_by for t in board.tasks} <= {"dev", "qa"}
        teammate_prompts = [r.system for r in dev_model.requests + qa_model.requests]
        assert teammate_prompts and not any("TEAM.md" in p for p in teammate_prompts)
        # The teammates may finish a blocker before the lead posts the task it blocks:
        # only a task posted while one of its blockers was still open waits to be unblocked.
        log = await system.store.read_stream("team/rel")
        done_at = {e.event.task_id: e.position for e in log if e.type == "team.task_completed"}  # type: ignore[union-attr]
        waited = {
            e.event.task_id  # type: ignore[union-attr]
            for e in log
            if e.type == "team.task_created"
            and any(done_at[b] > e.position for b in e.event.blocked_by)  # type: ignore[union-attr]
        }
        unblocked = [e.event.task_id for e in log if e.type == "team.task_unblocked"]  # type: ignore[union-attr]
        assert sorted(unblocked) == sorted(waited)
