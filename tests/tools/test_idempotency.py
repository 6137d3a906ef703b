"""Idempotency keys and side-effect declarations (tools.side_effects).

Every call runs with a key derived from its session, turn and call id (the same in every
process), recorded on ``tool.call_started``; tools declare what running a call again
would do, and an undeclared or wrongly declared tool counts as ``external``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from clawlog.events.domain.tool import ToolCallStarted
from clawlog.tools import (
    SIDE_EFFECTS,
    BaseTool,
    FunctionTool,
    RecordingSink,
    ToolContext,
    ToolPipeline,
    ToolRegistry,
    ToolResult,
    builtin_tools,
    idempotency_key,
    run_tool_call,
    side_effects_of,
)
from clawlog.tools.exec import ExecTool
from clawlog.tools.side_effects import call_side_effects, check_side_effects, may_run_again
from clawlog.tools.web import HttpTool, SearxngSearch, WebFetchTool, WebSearchTool
from clawlog.tools.workspace import WorkspaceEnv, workspace_tools


def keyed_tool(seen: list[str]) -> FunctionTool:
    async def handler(ctx: ToolContext, args: dict[str, Any]) -> str:
        seen.append(ctx.idempotency_key)
        return "ok"

    return FunctionTool("charge", handler, side_effects="idempotent")


async def call_once(ctx: ToolContext, call_id: str) -> tuple[str, RecordingSink]:
    """Run ``charge`` once through a fresh pipeline (as a new process would)."""
    seen: list[str] = []
    sink = RecordingSink()
    pipeline = ToolPipeline(ToolRegistry([keyed_tool(seen)]))
    await run_tool_call(pipeline, ctx, "charge", {}, sink, call_id=call_id)
    [key] = seen
    return key, sink


async def test_a_call_runs_with_the_key_of_its_session_turn_and_call_in_every_process() -> None:
    ctx = ToolContext(agent="main", session_key="s1", correlation_id="turn-1")
    key, sink = await call_once(ctx, "c1")
    again, _ = await call_once(ctx, "c1")

    assert key == again == idempotency_key("main", "s1", "turn-1", "c1")
    assert len(key) == 32 and int(key, 16) >= 0
    [started] = [e for e in sink.events if isinstance(e, ToolCallStarted)]
    assert started.idempotency_key == key  # the log says which key the tool saw


@pytest.mark.parametrize(
    ("agent", "session_key", "turn", "call_id"),
    [
        ("main", "s1", "turn-1", "c2"),  # another call
        ("main", "s1", "turn-2", "c1"),  # a provider reusing call ids in the next turn
        ("main", "s2", "turn-1", "c1"),  # another session
        ("other", "s1", "turn-1", "c1"),  # another agent
    ],
)
async def test_another_call_turn_session_or_agent_gets_another_key(
    agent: str, session_key: str, turn: str, call_id: str
) -> None:
    base, _ = await call_once(
        ToolContext(agent="main", session_key="s1", correlation_id="turn-1"), "c1"
    )
    ctx = ToolContext(agent=agent, session_key=session_key, correlation_id=turn)
    other, _ = await call_once(ctx, call_id)
    assert other != base


def test_the_parts_of_a_key_cannot_run_into_each_other() -> None:
    assert idempotency_key("ab", "c", "", "x") != idempotency_key("a", "bc", "", "x")
    assert idempotency_key("a", "b", "c", "d") == idempotency_key("a", "b", "c", "d")


async def test_a_key_the_caller_set_is_kept() -> None:
    ctx = ToolContext(agent="main", session_key="s1", idempotency_key="order-42")
    key, sink = await call_once(ctx, "c1")
    assert key == "order-42"
    [started] = [e for e in sink.events if isinstance(e, ToolCallStarted)]
    assert started.idempotency_key == "order-42"


class Undeclared:
    """A tool written before side effects existed: it says nothing about them."""

    name = "legacy"
    description = "old"
    parameters: Mapping[str, Any] = {"type": "object"}
    group = ""
    timeout = 5.0
    domain = "orchestrator"
    owner_only = False
    requires_sanitization = False
    requires_approval = False

    def requires_approval_for(self, args: Mapping[str, Any]) -> bool:
        return False

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        return ToolResult.text("ok")


class ByMode(BaseTool):
    name = "by_mode"
    side_effects = "none"

    def side_effects_for(self, args: Mapping[str, Any]) -> Any:
        mode = args.get("mode")
        if mode == "boom":
            raise RuntimeError("a broken declaration")
        return mode


def test_a_tool_that_declares_nothing_is_external_and_still_registers() -> None:
    tool = Undeclared()
    assert ToolRegistry([tool]).get("legacy") is tool  # type: ignore[arg-type]
    assert side_effects_of(tool) == "external"
    assert side_effects_of(tool, {"x": 1}) == "external"

    class Plain(BaseTool):
        name = "plain"

    assert side_effects_of(Plain(), {}) == "external"


def test_a_per_call_declaration_decides_and_a_wrong_one_counts_as_external() -> None:
    tool = ByMode()
    assert side_effects_of(tool) == "none"  # no arguments: the class attribute
    assert side_effects_of(tool, {"mode": "idempotent"}) == "idempotent"
    assert side_effects_of(tool, {"mode": "readonly"}) == "external"  # not a declaration
    assert side_effects_of(tool, {"mode": "boom"}) == "external"  # it raised


def test_a_wrong_declaration_is_refused_where_the_tool_is_defined() -> None:
    async def handler(ctx: ToolContext, args: dict[str, Any]) -> str:
        return ""

    with pytest.raises(ValueError, match=r"tool 'x': side_effects must be one of none, "):
        FunctionTool("x", handler, side_effects="readonly")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"tool 'bad': .* not 'safe'"):

        class Bad(BaseTool):
            name = "bad"
            side_effects = "safe"  # type: ignore[assignment]

    assert check_side_effects("none", "x") == "none"
    assert SIDE_EFFECTS == ("none", "idempotent", "external")
    assert [may_run_again(s) for s in SIDE_EFFECTS] == [True, True, False]


def test_the_tools_of_clawlog_declare_their_side_effects(tmp_path: Path) -> None:
    declared = {tool.name: side_effects_of(tool, {}) for tool in builtin_tools()}
    files = workspace_tools(WorkspaceEnv(), aliases=False)
    declared |= {tool.name: side_effects_of(tool, {}) for tool in files}
    declared["exec"] = side_effects_of(ExecTool(), {"command": "ls"})
    declared["web_fetch"] = side_effects_of(WebFetchTool(), {"url": "https://example.com"})
    search = WebSearchTool(SearxngSearch("http://127.0.0.1:9"))
    declared["web_search"] = side_effects_of(search, {"query": "x"})
    assert declared == {
        "echo": "none",
        "json": "none",
        "time": "none",
        "read_file": "none",
        "list_files": "none",
        "glob": "none",
        "search": "none",
        "write_file": "idempotent",  # the same content again leaves the same file
        "edit_file": "external",  # a second replace may apply again, or fail
        "apply_patch": "external",
        "exec": "external",
        "web_fetch": "none",
        "web_search": "none",
    }


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("GET", "none"),
        ("get", "none"),
        ("PUT", "idempotent"),
        ("DELETE", "idempotent"),
        ("POST", "external"),
        ("PATCH", "external"),
        ("", "external"),
    ],
)
def test_an_http_call_declares_by_its_method(method: str, expected: str) -> None:
    assert side_effects_of(HttpTool(), {"method": method, "url": "https://x"}) == expected


def test_a_recorded_call_is_judged_by_its_registered_tool_and_arguments() -> None:
    registry = ToolRegistry([HttpTool(), *builtin_tools()])
    assert call_side_effects(registry, "http", '{"method": "GET", "url": "https://x"}') == "none"
    assert call_side_effects(registry, "http", {"method": "POST", "url": "https://x"}) == "external"
    assert call_side_effects(registry, "echo", "") == "none"  # no arguments: {}
    assert call_side_effects(registry, "gone", "{}") == "external"  # no such tool
    assert call_side_effects(registry, "http", '{"method": "GET"') == "external"  # bad JSON
    assert call_side_effects(registry, "http", "[1]") == "external"  # not an object
