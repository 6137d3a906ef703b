"""Custom tools through the System: defined at run time, recorded on ``tools/custom``,
offered per scope (global or one agent) through the tool pipeline, kept across a restart
on the same SQLite log, refused by exec's deny table and checked at definition time."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from clawlog import AgentConfig, ApprovalConfig, ArgumentTypeError, InvalidArgument, System
from clawlog.actors.providers import ScriptedModel, call, reply
from clawlog.actors.providers import calls as calls_
from clawlog.events.domain.tool import (
    ToolAllowlistChanged,
    ToolApprovalRequested,
    ToolCallCompleted,
    ToolCallRefused,
)
from clawlog.tools import FunctionTool, ToolContext, ToolPipeline, ToolRegistry
from clawlog.tools.custom import CustomTool
from clawlog.tools.decisions import NeedsApproval

from .support import definition, string_schema


async def _turn(system: System, agent: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """Let ``agent`` make ``calls`` in one turn; the tool events of that turn."""
    session = f"s{len(await system.store.read_all(1, 100_000))}"
    steps = [calls_([(name, args)], ids=[f"c{n}"]) for n, (name, args) in enumerate(calls)]
    model = ScriptedModel([*steps, reply("ok")])
    await system.register_agent(AgentConfig(key=agent), model)
    assert await system.send(agent, session, "go") == "ok"
    events = await system.store.read_stream(f"session/{agent}/{session}")
    return [
        e.event
        for e in events
        if e.type.startswith("tool.call_") and e.type != "tool.call_requested"
    ]


def _outcomes(events: list[Any]) -> list[str]:
    return [type(e).__name__ for e in events if type(e).__name__ != "ToolCallStarted"]


async def test_definitions_survive_a_restart_and_each_agent_gets_its_scope(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.define_tool(
            "hello", command="echo hello {{.who}}", parameters=string_schema("who")
        )
        await system.define_tool("mine", command="echo only main", agent="main")
        await system.define_tool("off", command="echo off", enabled=False)
    async with System.open(tmp_path / "log.db") as system:
        assert [(e.name, e.scope) for e in system.custom_tools()] == [
            ("hello", "global"),
            ("off", "global"),
            ("mine", "agent:main"),
        ]
        assert [e.name for e in system.custom_tools("other")] == ["hello", "off"]
        main = await _turn(system, "main", ("hello", {"who": "world"}), ("mine", {}), ("off", {}))
        assert [
            getattr(e, "for_llm", "") for e in main[:4] if type(e).__name__ == "ToolCallCompleted"
        ] == [
            "hello world\n[exit code 0]",
            "only main\n[exit code 0]",
        ]
        assert isinstance(main[-1], ToolCallRefused) and main[-1].step == "resolve"  # disabled
        other = await _turn(system, "other", ("mine", {}))
        assert isinstance(other[0], ToolCallRefused) and other[0].step == "resolve"


async def test_a_running_agent_gets_new_definitions_and_loses_removed_ones(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel([reply("x")]))
        await system.define_tool("late", command="echo v1")
        first = await _turn(system, "main", ("late", {}))
        assert first[-1].for_llm == "v1\n[exit code 0]"
        await system.define_tool("late", command="echo v2")  # a redefinition replaces it
        second = await _turn(system, "main", ("late", {}))
        assert second[-1].for_llm == "v2\n[exit code 0]"
        assert await system.remove_tool("late") is True
        assert await system.remove_tool("late") is False
        third = await _turn(system, "main", ("late", {}))
        assert isinstance(third[0], ToolCallRefused) and third[0].step == "resolve"
        stream = await system.store.read_stream("tools/custom")
        assert [e.type for e in stream] == [
            "tool.custom_defined",
            "tool.custom_defined",
            "tool.custom_removed",
        ]


async def test_a_rendering_the_deny_table_refuses_is_recorded_like_an_exec_refusal(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran"
    async with System.open(tmp_path / "log.db") as system:
        await system.define_tool(
            "say",
            command=f"touch {marker}; printf '%s\\n' {{{{.text}}}}",
            parameters=string_schema("text"),
        )
        events = await _turn(system, "main", ("say", {"text": "rm -rf /"}))
    [refused] = events
    assert isinstance(refused, ToolCallRefused)
    assert refused.step == "approval" and refused.rule == "deny pattern 'rm -rf'"
    assert "matches the deny pattern 'rm -rf' (destructive file ops)" in refused.for_llm
    assert not marker.exists()


async def test_the_custom_policy_group_can_deny_every_custom_tool(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.define_tool("hello", command="echo hi")
        model = ScriptedModel([call("hello", call_id="c1"), reply("ok")])
        config = AgentConfig(key="main", tools_deny=["group:custom"])
        await system.register_agent(config, model)
        await system.send("main", "u", "go")
        refused = [
            e.event
            for e in await system.store.read_stream("session/main/u")
            if e.type == "tool.call_refused"
        ]
    assert len(refused) == 1 and refused[0].step == "policy"  # type: ignore[attr-defined]


def test_approval_rules_see_the_rendered_command() -> None:
    tool = CustomTool(definition("git push {{.flags}} origin", "flags"))
    ctx = ToolContext(agent="main", session_key="s1")
    pipeline = ToolPipeline(ToolRegistry([tool]))
    decision = pipeline.begin(ctx, "c1", "t", {"flags": "--force"})
    assert isinstance(decision, NeedsApproval)  # never auto-approved, as exec
    assert decision.request.pattern == "git push --force origin"
    assert decision.request.allow_always is False
    gated = ToolPipeline(ToolRegistry([tool]), approval_config=ApprovalConfig(security="allowlist"))
    decision = gated.begin(ctx, "c2", "t", {"flags": "--dry-run"})
    assert isinstance(decision, NeedsApproval)  # a command tool under security=allowlist
    assert decision.request.pattern == "git push --dry-run origin"


@pytest.mark.parametrize(
    ("fields", "parameter", "fragment"),
    [
        ({"name": "exec"}, "name", "built-in"),
        ({"name": "has space"}, "name", "not a tool name"),
        ({"command": "echo {{.nope}}"}, "command", "{{.nope}} name no property"),
        ({"command": "echo '{{.a}}'"}, "command", "inside single quotes"),
        ({"command": "rm -rf {{.a}}"}, "command", "exec refuses this command"),
        ({"parameters": {"type": "string"}}, "parameters", "object schema"),
        (
            {"parameters": {"type": "object", "properties": {"a": {"type": 5}}}},
            "parameters",
            "does not compile",
        ),
        ({"timeout_s": 0}, "timeout_s", "more than 0"),
        ({"timeout_s": 10_000}, "timeout_s", "at most"),
        ({"working_dir": "relative/dir"}, "working_dir", "absolute path"),
        ({"env": {"LD_PRELOAD": "x.so"}}, "env", "cannot be set"),
        ({"env": {"1BAD": "x"}}, "env", "not a variable name"),
    ],
)
async def test_a_bad_definition_names_its_field_and_records_nothing(
    tmp_path: Path, secret_key: str, fields: dict[str, Any], parameter: str, fragment: str
) -> None:
    values: dict[str, Any] = {
        "name": "t",
        "command": "echo {{.a}}",
        "parameters": string_schema("a"),
    }
    values.update(fields)
    name = values.pop("name")
    async with System.open(tmp_path / "log.db") as system:
        with pytest.raises(InvalidArgument) as caught:
            await system.define_tool(name, **values)
        assert caught.value.parameter == parameter
        assert fragment in str(caught.value)
        assert await system.store.read_stream("tools/custom") == []


@pytest.mark.parametrize(
    ("fields", "parameter"),
    [
        ({"name": 5}, "name"),
        ({"command": ["echo"]}, "command"),
        ({"parameters": "object"}, "parameters"),
        ({"timeout_s": "60"}, "timeout_s"),
        ({"enabled": "yes"}, "enabled"),
        ({"agent": 7}, "agent"),
    ],
)
async def test_a_definition_field_of_the_wrong_type_is_an_argument_type_error(
    tmp_path: Path, fields: dict[str, Any], parameter: str
) -> None:
    values: dict[str, Any] = {"name": "t", "command": "echo hi"}
    values.update(fields)
    name = values.pop("name")
    async with System.open(tmp_path / "log.db") as system:
        with pytest.raises(ArgumentTypeError) as caught:
            await system.define_tool(name, **values)
        assert caught.value.parameter == parameter


async def test_a_name_is_one_tool_per_agent(tmp_path: Path) -> None:
    deploy = FunctionTool("deploy", lambda ctx, args: _ok())
    async with System.open(tmp_path / "log.db") as system:
        await system.define_tool("lookup", command="echo global")
        with pytest.raises(InvalidArgument, match="a global custom tool 'lookup' exists"):
            await system.define_tool("lookup", command="echo mine", agent="main")
        await system.define_tool("own", command="echo own", agent="main")
        with pytest.raises(InvalidArgument, match="agent 'main' has its own custom tool 'own'"):
            await system.define_tool("own", command="echo global")
        await system.register_agent(
            AgentConfig(key="ops"), ScriptedModel([reply("x")]), tools=[deploy]
        )
        with pytest.raises(InvalidArgument, match="agent 'ops' already has a tool named 'deploy'"):
            await system.define_tool("deploy", command="echo custom")
        assert [e.name for e in system.custom_tools()] == ["lookup", "own"]


async def _ok() -> str:
    return "ok"


async def test_a_timeout_kills_the_command(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.define_tool("stall", command="sleep 30", timeout_s=0.5)
        events = await _turn(system, "main", ("stall", {}))
    failed = events[-1]
    assert type(failed).__name__ == "ToolCallFailed" and failed.error_kind == "timeout"
    assert "custom tool 'stall' timed out after 0.5 s" in failed.message


async def _wait_for(system: System, stream: str, event_type: str, count: int) -> None:
    seen = 0
    async with system.store.subscribe(1, stream_prefix=stream) as events:
        async for recorded in events:
            if recorded.stream == stream and recorded.type == event_type:
                seen += 1
                if seen == count:
                    return


async def test_allow_always_allowlists_the_rendered_command_for_that_agent(tmp_path: Path) -> None:
    approvals = ApprovalConfig(security="allowlist")
    model = ScriptedModel(
        [
            call("greet", call_id="c1", who="ann"),
            call("greet", call_id="c2", who="ann"),
            call("greet", call_id="c3", who="bob"),
            reply("ok"),
        ]
    )
    async with System.open(tmp_path / "log.db", approvals=approvals) as system:
        await system.define_tool(
            "greet", command="echo hi {{.who}}", parameters=string_schema("who")
        )
        await system.register_agent(AgentConfig(key="main"), model)
        turn = asyncio.ensure_future(system.send("main", "u", "go"))
        await _wait_for(system, "session/main/u", "tool.approval_requested", 1)
        assert await system.approve("main", "u", "c1", "allow-always", by="ops")
        await _wait_for(system, "session/main/u", "tool.approval_requested", 2)  # bob: not ann
        assert await system.approve("main", "u", "c3", "deny", by="ops")
        assert await turn == "ok"
        events = [e.event for e in await system.store.read_stream("session/main/u")]
    asked = [e.call_id for e in events if isinstance(e, ToolApprovalRequested)]
    assert asked == ["c1", "c3"]  # c2 ran from the allowlist
    [added] = [e for e in events if isinstance(e, ToolAllowlistChanged)]
    assert (added.tool, added.pattern) == ("greet", "echo hi ann")
    done = [e.for_llm for e in events if isinstance(e, ToolCallCompleted)]
    assert done == ["hi ann\n[exit code 0]", "hi ann\n[exit code 0]"]
