"""The registry: protected names, duplicates, runtime changes, clones, definitions."""

from __future__ import annotations

from typing import Any

import pytest

from clawlog.tools import (
    PROTECTED_NAMES,
    DuplicateTool,
    FunctionTool,
    InvalidSchema,
    ProtectedName,
    ToolContext,
    ToolRegistry,
    UnknownTool,
    builtin_tools,
)
from clawlog.tools.builtins import EchoTool


async def _noop(ctx: ToolContext, args: dict[str, Any]) -> str:
    return "x"


def runtime(name: str, **options: Any) -> FunctionTool:
    return FunctionTool(name, _noop, **options)


def test_the_seed_004_builtin_names_are_protected() -> None:
    assert {"echo", "time", "json", "http", "shell", "build_software"} <= PROTECTED_NAMES
    assert (
        len(
            PROTECTED_NAMES
            & {
                "echo",
                "time",
                "json",
                "http",
                "shell",
                "read_file",
                "write_file",
                "list_dir",
                "apply_patch",
                "memory_search",
                "memory_write",
                "memory_read",
                "memory_tree",
                "create_job",
                "list_jobs",
                "job_status",
                "cancel_job",
                "job_events",
                "job_prompt",
                "tool_search",
                "tool_install",
                "tool_auth",
                "tool_activate",
                "tool_list",
                "tool_remove",
                "skill_list",
                "skill_search",
                "skill_install",
                "skill_remove",
                "routine_create",
                "routine_list",
                "routine_update",
                "routine_delete",
                "routine_history",
                "build_software",
            }
        )
        == 35
    )


def test_a_startup_tool_with_any_name_becomes_protected() -> None:
    registry = ToolRegistry([runtime("acme_search")])
    assert registry.is_protected("acme_search")
    with pytest.raises(ProtectedName, match="protected built-in tool name"):
        registry.register(runtime("acme_search"), replace=True)


def test_startup_names_are_protected_and_runtime_tools_cannot_shadow_or_remove_them() -> None:
    registry = ToolRegistry([EchoTool()])
    with pytest.raises(ProtectedName, match="protected"):
        registry.register(runtime("echo"))
    with pytest.raises(ProtectedName):
        registry.register(runtime("exec"))  # a built-in name, even if absent
    with pytest.raises(ProtectedName):
        registry.unregister("echo")


def test_runtime_tools_can_be_added_replaced_and_removed() -> None:
    registry = ToolRegistry(builtin_tools())
    first, second = runtime("mcp_github_issues"), runtime("mcp_github_issues")
    registry.register(first)
    with pytest.raises(DuplicateTool):
        registry.register(second)
    registry.register(second, replace=True)
    assert registry.get("mcp_github_issues") is second
    assert registry.unregister("mcp_github_issues") is second
    assert "mcp_github_issues" not in registry
    with pytest.raises(UnknownTool):
        registry.unregister("mcp_github_issues")


def test_startup_registration_refuses_a_duplicate() -> None:
    with pytest.raises(DuplicateTool):
        ToolRegistry([EchoTool(), EchoTool()])


@pytest.mark.parametrize(
    ("tool", "error"),
    [
        (runtime("bad name!"), ValueError),
        (runtime(""), ValueError),
        (runtime("broken", parameters={"type": "wat"}), InvalidSchema),
        (runtime("remote", parameters={"$ref": "https://example.com/s.json"}), InvalidSchema),
        (object(), TypeError),
    ],
)
def test_a_malformed_tool_is_refused_at_registration(tool: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        ToolRegistry().register(tool)


def test_a_clone_is_independent_both_ways_and_keeps_protection() -> None:
    registry = ToolRegistry(builtin_tools())
    registry.register(runtime("global_tool"))
    clone = registry.clone()
    clone.register(runtime("agent_tool"))
    registry.register(runtime("late_global"))
    assert "agent_tool" in clone and "agent_tool" not in registry
    assert "late_global" in registry and "late_global" not in clone
    assert "global_tool" in clone
    clone.unregister("global_tool")
    assert "global_tool" in registry.names() and "global_tool" not in clone.names()
    with pytest.raises(ProtectedName):
        clone.register(runtime("echo"))


def test_definitions_are_normalized_per_provider_and_follow_replacement() -> None:
    registry = ToolRegistry()
    registry.register(runtime("t", description="v1", parameters={"properties": {}}))
    assert registry.definitions("openai")[0].parameters["type"] == "object"
    assert registry.definitions("anthropic")[0].parameters == {"properties": {}}
    registry.register(runtime("t", description="v2"), replace=True)
    assert registry.definitions("openai")[0].description == "v2"


def test_the_validator_is_compiled_once_per_tool() -> None:
    registry = ToolRegistry(builtin_tools())
    assert registry.validator("echo") is registry.validator("echo")
    with pytest.raises(UnknownTool):
        registry.validator("nope")


def test_a_tool_with_a_domain_the_log_cannot_record_is_refused_at_registration() -> None:
    # tool.call_started records the domain as a Literal: refused here, with the tool's name,
    # instead of failing the session when the call is recorded.
    from clawlog.tools import FunctionTool, ToolRegistry

    async def run(ctx: Any, args: dict[str, Any]) -> str:
        return "ok"

    tool = FunctionTool("odd", run, domain="browser")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'odd': domain 'browser' is not one of orchestrator"):
        ToolRegistry().register(tool)
