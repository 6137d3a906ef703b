"""A re-run knows the custom tools the agent had: their calls are decided by the same
deny table and approval rules as then, so a refused call is refused again (no false
divergence), and nothing runs."""

from __future__ import annotations

from pathlib import Path

from clawlog import AgentConfig, System
from clawlog.actors.providers import ScriptedModel, calls, reply
from clawlog.actors.replay import rerun

from .support import string_schema


async def test_a_session_whose_custom_tool_call_was_refused_re_runs_matching(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran"
    async with System.open(tmp_path / "log.db") as system:
        await system.define_tool(
            "say",
            command=f"touch {marker}; printf '%s\\n' {{{{.text}}}}",
            parameters=string_schema("text"),
        )
        steps = [
            calls([("say", {"text": "rm -rf /"})], ids=["c1"]),
            calls([("say", {"text": "hello"})], ids=["c2"]),
            reply("ok"),
        ]
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(steps))
        assert await system.send("main", "u", "go") == "ok"
        marker.unlink()  # the second call ran it
        report = await rerun(system.store, "main", "u")
    assert report.divergence is None, report.divergence
    assert (report.turns, report.tool_calls) == (1, 2)
    assert not marker.exists()  # a re-run never runs a tool
