"""Registry rules, provider schema normalization, and the built-in utilities."""

from __future__ import annotations

from typing import Any

import pytest

from tools import (
    EchoTool,
    FunctionTool,
    JsonTool,
    ProtectedName,
    TimeTool,
    ToolContext,
    ToolRegistry,
)
from tools.schemas import normalize_schema

CTX = ToolContext(agent="a", session_key="s")


async def _noop(ctx: ToolContext, args: dict[str, Any]) -> str:
    return "x"


def test_startup_names_are_protected_and_runtime_tools_cannot_shadow_them() -> None:
    registry = ToolRegistry([EchoTool()])
    with pytest.raises(ProtectedName, match="protected"):
        registry.register(FunctionTool("echo", _noop))
    with pytest.raises(ProtectedName):
        registry.register(FunctionTool("exec", _noop))  # a built-in name, even if absent
    registry.register(FunctionTool("mcp_demo_echo", _noop))
    clone = registry.clone()
    clone.unregister("mcp_demo_echo")
    assert "mcp_demo_echo" in registry.names() and "mcp_demo_echo" not in clone.names()
    with pytest.raises(ProtectedName):
        registry.unregister("echo")


def test_openai_gets_an_object_root_and_no_type_arrays() -> None:
    schema = {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}
    normalized = normalize_schema(schema, "openai")
    assert normalized["type"] == "object"
    assert normalized["properties"]["n"]["type"] == "integer"
    assert normalize_schema({"properties": {}}, "openai")["type"] == "object"


def test_gemini_flattens_any_of_keeping_enums_and_required() -> None:
    schema = {
        "type": "object",
        "required": ["mode"],
        "properties": {
            "mode": {
                "anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "string", "enum": ["c"]}]
            }
        },
    }
    normalized = normalize_schema(schema, "gemini")
    mode = normalized["properties"]["mode"]
    assert "anyOf" not in mode and set(mode["enum"]) == {"a", "b", "c"}
    assert normalized["required"] == ["mode"]
    assert normalize_schema(schema, "anthropic") == schema


async def test_builtins_answer() -> None:
    assert (await EchoTool().execute(CTX, {"message": "hi"})).for_llm == "hi"
    parsed = await JsonTool().execute(
        CTX, {"operation": "query", "data": '{"a": {"b": [1, 2]}}', "path": "a.b[1]"}
    )
    assert parsed.for_llm == "2"
    diff = await TimeTool().execute(
        CTX,
        {
            "operation": "diff",
            "timestamp": "2026-01-01T00:00:00Z",
            "timestamp2": "2026-01-02T00:00:00Z",
        },
    )
    assert diff.for_llm == '{"seconds":86400.0}'
