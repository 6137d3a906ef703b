"""The policy engine, table-driven: every step of seed 001 §5 / seed 002 §5 (seed 003
allowedTools) and each precedence rule, with the step that decided (``explain``)."""

from __future__ import annotations

from typing import Any

import pytest

from clawlog.tools import (
    POLICY_STEPS,
    FunctionTool,
    PolicyConfig,
    PolicyError,
    ProviderToolPolicy,
    Tool,
    ToolContext,
    ToolPolicy,
)
from clawlog.tools.policy import PolicyEngine

from .support import NamedTool, context

TOOLS = {
    t.name: t
    for t in [
        NamedTool("read_file", "fs"),
        NamedTool("exec", "runtime"),
        NamedTool("web_search", "web"),
        NamedTool("message", "messaging"),
        NamedTool("session_status", "sessions"),
        NamedTool("spawn", "sessions"),
        NamedTool("memory_get", "memory"),
        NamedTool("team_tasks", "team"),
        NamedTool("cron", "automation"),
        NamedTool("deploy", "ops", owner_only=True),
        NamedTool("mcp_github_issues", "mcp:github"),
        NamedTool("mcp_slack_post", "mcp:slack"),
    ]
}


async def _noop(ctx: ToolContext, args: dict[str, Any]) -> str:
    return ""


def bare(name: str) -> FunctionTool:
    """A tool without a ``group`` attribute: only the static group tables place it."""
    return FunctionTool(name, _noop)


G = ToolPolicy  # global / agent sections
P = ProviderToolPolicy
CASES: list[tuple[str, dict[str, Any], dict[str, Any], str | Tool, bool, str]] = [
    # id, config, ctx overrides, tool (a TOOLS name, or a tool), allowed, deciding step
    # ("" = nothing removed it)
    ("default is full", {}, {}, "exec", True, ""),
    (
        "agent profile full keeps everything",
        {"agents": {"main": G(profile="full")}},
        {},
        "exec",
        True,
        "",
    ),
    (
        "profile minimal keeps session_status",
        {"tools": G(profile="minimal")},
        {},
        "session_status",
        True,
        "",
    ),
    ("profile minimal removes exec", {"tools": G(profile="minimal")}, {}, "exec", False, "profile"),
    ("profile coding keeps fs", {"tools": G(profile="coding")}, {}, "read_file", True, ""),
    (
        "profile coding keeps fs for a tool placed by the static group tables",
        {"tools": G(profile="coding")},
        {},
        bare("read_file"),
        True,
        "",
    ),
    (
        "profile coding removes messaging",
        {"tools": G(profile="coding")},
        {},
        "message",
        False,
        "profile",
    ),
    ("profile messaging keeps message", {"tools": G(profile="messaging")}, {}, "message", True, ""),
    (
        "profile messaging removes exec",
        {"tools": G(profile="messaging")},
        {},
        "exec",
        False,
        "profile",
    ),
    ("profile full keeps mcp tools", {"tools": G(profile="full")}, {}, "mcp_slack_post", True, ""),
    (
        "agent profile overrides the global profile",
        {"tools": G(profile="minimal"), "agents": {"main": G(profile="coding")}},
        {},
        "exec",
        True,
        "",
    ),
    (
        "provider profile applies for that provider",
        {"tools": G(by_provider={"openai": P(profile="minimal")})},
        {"provider": "openai"},
        "exec",
        False,
        "provider_profile",
    ),
    (
        "provider profile ignores other providers",
        {"tools": G(by_provider={"openai": P(profile="minimal")})},
        {"provider": "anthropic"},
        "exec",
        True,
        "",
    ),
    ("global allow intersects", {"tools": G(allow=["group:fs"])}, {}, "exec", False, "allow"),
    ("global allow keeps its group", {"tools": G(allow=["group:fs"])}, {}, "read_file", True, ""),
    (
        "provider allow intersects",
        {"tools": G(by_provider={"gemini": P(allow=["read_file"])})},
        {"provider": "gemini"},
        "web_search",
        False,
        "provider_allow",
    ),
    (
        "agent allow intersects",
        {"agents": {"main": G(allow=["web_search"])}},
        {},
        "exec",
        False,
        "agent_allow",
    ),
    (
        "agent allow of another agent does not apply",
        {"agents": {"other": G(allow=["web_search"])}},
        {},
        "exec",
        True,
        "",
    ),
    (
        "agent+provider allow intersects",
        {"agents": {"main": G(by_provider={"openai": P(allow=["web_search"])})}},
        {"provider": "openai"},
        "exec",
        False,
        "agent_provider_allow",
    ),
    (
        "steps intersect: a later allow cannot widen an earlier one",
        {"tools": G(allow=["read_file"]), "agents": {"main": G(allow=["exec", "read_file"])}},
        {},
        "exec",
        False,
        "allow",
    ),
    (
        "group chat allow list applies in that group",
        {"chat_groups": {"telegram:-100": ["web_search"]}},
        {"peer_kind": "group", "channel": "telegram", "chat_id": "-100"},
        "exec",
        False,
        "group_allow",
    ),
    (
        "group chat allow list does not apply to direct chats",
        {"chat_groups": {"telegram:-100": ["web_search"]}},
        {"channel": "telegram", "chat_id": "-100"},
        "exec",
        True,
        "",
    ),
    (
        "group chat wildcard entry",
        {"chat_groups": {"*": ["web_search"]}},
        {"peer_kind": "group", "chat_id": "-7"},
        "web_search",
        True,
        "",
    ),
    ("global deny removes", {"tools": G(deny=["exec"])}, {}, "exec", False, "deny"),
    (
        "group deny removes a tool placed by the static group tables",
        {"tools": G(deny=["group:runtime"])},
        {},
        bare("exec"),
        False,
        "deny",
    ),
    (
        "deny beats allow",
        {"tools": G(allow=["exec", "read_file"], deny=["group:runtime"])},
        {},
        "exec",
        False,
        "deny",
    ),
    (
        "provider deny is part of the global deny",
        {"tools": G(by_provider={"openai": P(deny=["exec"])})},
        {"provider": "openai"},
        "exec",
        False,
        "deny",
    ),
    ("agent deny removes", {"agents": {"main": G(deny=["exec"])}}, {}, "exec", False, "agent_deny"),
    (
        "agent deny beats agent allow",
        {"agents": {"main": G(allow=["exec"], deny=["exec"])}},
        {},
        "exec",
        False,
        "agent_deny",
    ),
    (
        "alsoAllow is additive over a profile",
        {"tools": G(profile="minimal", also_allow=["exec"])},
        {},
        "exec",
        True,
        "also_allow",
    ),
    (
        "agent alsoAllow is additive over the global allow",
        {"tools": G(allow=["read_file"]), "agents": {"main": G(also_allow=["group:web"])}},
        {},
        "web_search",
        True,
        "also_allow",
    ),
    (
        "alsoAllow never beats deny",
        {"tools": G(profile="minimal", also_allow=["exec"], deny=["exec"])},
        {},
        "exec",
        False,
        "profile",
    ),
    (
        "alsoAllow does not add back what deny removed",
        {"tools": G(also_allow=["exec"], deny=["exec"])},
        {},
        "exec",
        False,
        "deny",
    ),
    (
        "subagent deny list at depth 1",
        {},
        {"depth": 1, "max_depth": 2},
        "session_status",
        False,
        "subagent_deny",
    ),
    ("subagent deny list does not apply at depth 0", {}, {}, "session_status", True, ""),
    (
        "subagent deny beats alsoAllow",
        {"tools": G(profile="minimal", also_allow=["memory_get"])},
        {"depth": 1, "max_depth": 2},
        "memory_get",
        False,
        "subagent_deny",
    ),
    ("leaf deny at max depth", {}, {"depth": 1, "max_depth": 1}, "spawn", False, "leaf_deny"),
    ("no leaf deny below max depth", {}, {"depth": 1, "max_depth": 2}, "spawn", True, ""),
    (
        "owner-only table removes cron for others",
        {},
        {"is_owner": False},
        "cron",
        False,
        "owner_only",
    ),
    ("owner keeps owner-only tools", {}, {"is_owner": True}, "cron", True, ""),
    ("a tool flagged owner_only is removed for others", {}, {}, "deploy", False, "owner_only"),
    (
        "owner-only beats alsoAllow",
        {"tools": G(also_allow=["cron"])},
        {},
        "cron",
        False,
        "owner_only",
    ),
    (
        "user allowedTools intersects",
        {"users": {"telegram:42": ["read_file"]}},
        {},
        "exec",
        False,
        "user_allowed_tools",
    ),
    (
        "another user's allowedTools does not apply",
        {"users": {"telegram:7": ["read_file"]}},
        {},
        "exec",
        True,
        "",
    ),
    (
        "per-request allow list is the final intersection",
        {},
        {"request_allow": ("read_file",)},
        "exec",
        False,
        "request_allow",
    ),
    (
        "per-request allow list cannot widen the policy",
        {"tools": G(deny=["exec"])},
        {"request_allow": ("exec",)},
        "exec",
        False,
        "deny",
    ),
    (
        "an empty per-request list allows nothing",
        {},
        {"request_allow": ()},
        "read_file",
        False,
        "request_allow",
    ),
    ("an empty allow list allows nothing", {"tools": G(allow=[])}, {}, "read_file", False, "allow"),
    (
        "group:mcp holds every MCP server's tools",
        {"tools": G(allow=["group:mcp"])},
        {},
        "mcp_slack_post",
        True,
        "",
    ),
    (
        "group:mcp excludes native tools",
        {"tools": G(allow=["group:mcp"])},
        {},
        "exec",
        False,
        "allow",
    ),
    (
        "group:mcp:{server} holds only that server",
        {"tools": G(allow=["group:mcp:github"])},
        {},
        "mcp_slack_post",
        False,
        "allow",
    ),
    (
        "group:mcp:{server} in a deny list removes that server's tools",
        {"tools": G(deny=["group:mcp:github"])},
        {},
        "mcp_github_issues",
        False,
        "deny",
    ),
    (
        "group:native excludes MCP tools",
        {"tools": G(deny=["group:native"])},
        {},
        "mcp_github_issues",
        True,
        "",
    ),
    (
        "group:goclaw is native tools",
        {"tools": G(deny=["group:goclaw"])},
        {},
        "exec",
        False,
        "deny",
    ),
    (
        "glob entries match names",
        {"tools": G(deny=["mcp_github_*"])},
        {},
        "mcp_github_issues",
        False,
        "deny",
    ),
    ("* allows everything", {"tools": G(allow=["*"])}, {}, "mcp_github_issues", True, ""),
    (
        "group:teams is an alias of group:team",
        {"tools": G(allow=["group:teams"])},
        {},
        "team_tasks",
        True,
        "",
    ),
]


@pytest.mark.parametrize(
    ("config", "ctx", "tool", "allowed", "step"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_policy_step_decides(
    config: dict[str, Any], ctx: dict[str, Any], tool: str | Tool, allowed: bool, step: str
) -> None:
    engine = PolicyEngine(PolicyConfig(**config))
    subject = TOOLS[tool] if isinstance(tool, str) else tool
    explanation = engine.explain(subject, context(**ctx))
    assert explanation.allowed is allowed, str(explanation)
    assert explanation.decided_by == step, str(explanation)
    assert engine.is_allowed(subject, context(**ctx)) is allowed


def test_every_case_table_step_is_covered() -> None:
    decided = {case[5] for case in CASES}
    assert set(POLICY_STEPS) <= decided


def test_explain_walks_every_step_in_order_and_names_the_rule() -> None:
    engine = PolicyEngine(PolicyConfig(tools=G(allow=["read_file"], deny=["exec"])))
    explanation = engine.explain(TOOLS["exec"], context())
    assert [t.step for t in explanation.steps] == list(POLICY_STEPS)
    by_step = {t.step: t for t in explanation.steps}
    assert by_step["allow"].effect == "removed"
    assert "tools.allow does not list it" in by_step["allow"].rule
    assert by_step["deny"].effect == "skipped"
    assert "'exec'" in by_step["deny"].rule
    assert "removed by allow" in explanation.summary()


def test_also_allow_reports_that_deny_beats_it() -> None:
    engine = PolicyEngine(
        PolicyConfig(tools=G(profile="minimal", also_allow=["exec"], deny=["exec"]))
    )
    trace = {t.step: t for t in engine.explain(TOOLS["exec"], context()).steps}
    assert "deny beats allow" in trace["also_allow"].rule


def test_filter_returns_the_allowed_tools_in_order() -> None:
    engine = PolicyEngine(PolicyConfig(tools=G(profile="coding")))
    names = [t.name for t in engine.filter(TOOLS.values(), context())]
    assert names == ["read_file", "exec", "web_search", "session_status", "spawn", "memory_get"]


def test_an_unknown_profile_is_refused_at_construction() -> None:
    with pytest.raises(PolicyError, match="unknown tool profile"):
        PolicyEngine(PolicyConfig(agents={"main": G(profile="admin")}))


def test_a_tool_name_alone_is_matched_through_the_static_group_tables() -> None:
    engine = PolicyEngine(PolicyConfig(tools=G(allow=["group:runtime"])))
    assert engine.is_allowed("exec", context())
    assert engine.is_allowed("process", context())
    assert not engine.is_allowed("read_file", context())
