"""Helpers of the custom tool tests."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from clawlog.events.domain.custom_tool import CustomToolDefined
from clawlog.tools import ToolResult

__all__ = ["definition", "printed_argv", "string_schema"]


def string_schema(*names: str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """An object schema of string properties."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: {"type": "string"} for name in names},
    }
    if required:
        schema["required"] = list(required)
    return schema


def definition(command: str, *names: str, **fields: Any) -> CustomToolDefined:
    """A global definition event (no env) with string parameters ``names``."""
    values: dict[str, Any] = {"name": "t", "command": command, "parameters": string_schema(*names)}
    values.update(fields)
    return CustomToolDefined(**values)


def printed_argv(result: ToolResult) -> list[str]:
    """What the argv program printed: the JSON line before ``[exit code 0]``."""
    assert not result.is_error, result.for_llm
    body, _, code = result.for_llm.rpartition("\n")
    assert code == "[exit code 0]", result.for_llm
    value = json.loads(body)
    assert isinstance(value, list)
    return [str(v) for v in value]


def payload_dicts(events: list[Any]) -> list[dict[str, Any]]:
    """Every event as plain values (for scanning what the log holds)."""
    return [msgspec.to_builtins(e) for e in events]
