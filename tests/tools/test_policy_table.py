"""The policy pipeline, table-driven: every step and each precedence rule (seed 001 §5,
seed 002 §5, seed 003 allowedTools). Each row: config, caller, tool, kept?, deciding step."""

from __future__ import annotations

from typing import Any

import pytest

from tools import (
    FunctionTool,
    PolicyConfig,
    PolicyEngine,
    ProviderToolPolicy,
    ToolContext,
    ToolPolicy,
)


async def _noop(ctx: ToolContext, args: dict[str, Any]) -> str:
    return ""


def tool(name: str) -> FunctionTool:
    return FunctionTool(name, _noop)


def ctx(**values: Any) -> ToolContext:
    return ToolContext(**{"agent": "main", "session_key": "s", **values})


AGENT = {"main": ToolPolicy(profile="full")}

CASES = [
    ("full profile keeps everything", PolicyConfig(agents=AGENT), ctx(), "exec", True, "profile"),
    (
        "coding profile drops messaging",
        PolicyConfig(tools=ToolPolicy(profile="coding")),
        ctx(),
        "message",
        False,
        "profile",
    ),
    (
        "coding profile keeps fs",
        PolicyConfig(tools=ToolPolicy(profile="coding")),
        ctx(),
        "read_file",
        True,
        "profile",
    ),
    (
        "global allow list",
        PolicyConfig(tools=ToolPolicy(allow=["read_file"])),
        ctx(),
        "exec",
        False,
        "allow",
    ),
    (
        "agent allow list",
        PolicyConfig(agents={"main": ToolPolicy(allow=["group:fs"])}),
        ctx(),
        "exec",
        False,
        "agent_allow",
    ),
    (
        "provider profile override",
        PolicyConfig(
            tools=ToolPolicy(by_provider={"openai": ProviderToolPolicy(profile="minimal")})
        ),
        ctx(provider="openai"),
        "exec",
        False,
        "provider_profile",
    ),
    (
        "another provider is unaffected",
        PolicyConfig(
            tools=ToolPolicy(by_provider={"openai": ProviderToolPolicy(profile="minimal")})
        ),
        ctx(provider="anthropic"),
        "exec",
        True,
        "profile",
    ),
    ("global deny", PolicyConfig(tools=ToolPolicy(deny=["exec"])), ctx(), "exec", False, "deny"),
    (
        "agent deny",
        PolicyConfig(agents={"main": ToolPolicy(deny=["exec"])}),
        ctx(),
        "exec",
        False,
        "agent_deny",
    ),
    (
        "deny beats allow",
        PolicyConfig(tools=ToolPolicy(allow=["exec"], deny=["exec"])),
        ctx(),
        "exec",
        False,
        "deny",
    ),
    (
        "group deny",
        PolicyConfig(tools=ToolPolicy(deny=["group:runtime"])),
        ctx(),
        "exec",
        False,
        "deny",
    ),
    (
        "alsoAllow is additive",
        PolicyConfig(tools=ToolPolicy(profile="coding", also_allow=["message"])),
        ctx(),
        "message",
        True,
        "also_allow",
    ),
    (
        "alsoAllow does not beat deny",
        PolicyConfig(tools=ToolPolicy(also_allow=["exec"], deny=["exec"])),
        ctx(),
        "exec",
        False,
        "deny",
    ),
    (
        "subagent deny list",
        PolicyConfig(),
        ctx(depth=1, max_depth=2),
        "sessions_send",
        False,
        "subagent_deny",
    ),
    ("top level keeps sessions_send", PolicyConfig(), ctx(), "sessions_send", True, "profile"),
    (
        "leaf deny at max depth",
        PolicyConfig(),
        ctx(depth=1, max_depth=1),
        "spawn",
        False,
        "leaf_deny",
    ),
    (
        "no leaf deny below max depth",
        PolicyConfig(),
        ctx(depth=1, max_depth=2),
        "spawn",
        True,
        "profile",
    ),
    ("owner-only for others", PolicyConfig(), ctx(is_owner=False), "cron", False, "owner_only"),
    ("owner-only for the owner", PolicyConfig(), ctx(is_owner=True), "cron", True, "profile"),
    (
        "per-user allowedTools",
        PolicyConfig(users={"bob": ["read_file"]}),
        ctx(user="bob"),
        "exec",
        False,
        "user_allowed_tools",
    ),
    (
        "other users unrestricted",
        PolicyConfig(users={"bob": ["read_file"]}),
        ctx(user="ann"),
        "exec",
        True,
        "profile",
    ),
    (
        "per-request allow list is a final intersection",
        PolicyConfig(),
        ctx(request_allow=("read_file",)),
        "exec",
        False,
        "request_allow",
    ),
    (
        "mcp group",
        PolicyConfig(tools=ToolPolicy(deny=["group:mcp:github"])),
        ctx(),
        "mcp_github_search",
        False,
        "deny",
    ),
]


@pytest.mark.parametrize(
    ("config", "caller", "name", "kept", "step"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_policy_step(
    config: PolicyConfig, caller: ToolContext, name: str, kept: bool, step: str
) -> None:
    engine = PolicyEngine(config)
    subject: Any = tool(name)
    if name.startswith("mcp_github"):
        subject = FunctionTool(name, _noop, group="mcp:github")
    explanation = engine.explain(subject, caller)
    assert engine.is_allowed(subject, caller) is kept
    if not kept:
        assert explanation.decided_by == step, str(explanation)
