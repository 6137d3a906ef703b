"""The built-in utilities: echo, time (now, parse, format, diff), json (parse, query,
stringify, validate), through the pipeline as a model would call them, and directly."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from clawlog.tools import ToolContext, ToolPipeline, ToolRegistry, builtin_tools
from clawlog.tools.builtins import EchoTool, JsonTool, TimeTool
from clawlog.tools.driver import RecordingSink, run_tool_call

from .support import FakeClock, context


async def call(name: str, args: dict[str, Any], clock: FakeClock | None = None) -> Any:
    tools = builtin_tools() if clock is None else [TimeTool(clock)]
    result = await run_tool_call(
        ToolPipeline(ToolRegistry(tools)), context(), name, args, RecordingSink()
    )
    return result


async def value(name: str, args: dict[str, Any], clock: FakeClock | None = None) -> Any:
    result = await call(name, args, clock)
    assert not result.is_error, result.for_llm
    return msgspec.json.decode(result.for_llm)


async def test_echo_returns_the_message() -> None:
    assert (await call("echo", {"message": "ping 1 2 3"})).for_llm == "ping 1 2 3"


async def test_time_now_uses_the_clock() -> None:
    now = await value("time", {"operation": "now"}, FakeClock(1_700_000_000.5))
    assert now == {
        "iso": "2023-11-14T22:13:20.500000+00:00",
        "unix": 1_700_000_000,
        "unix_millis": 1_700_000_000_500,
    }


@pytest.mark.parametrize(
    ("timestamp", "unix"),
    [
        ("2024-05-01T12:00:00Z", 1_714_564_800),
        ("2024-05-01T14:00:00+02:00", 1_714_564_800),
        ("2024-05-01T12:00:00", 1_714_564_800),  # naive means UTC
        ("1714564800", 1_714_564_800),
    ],
)
async def test_time_parse_accepts_iso_and_unix(timestamp: str, unix: int) -> None:
    assert (await value("time", {"operation": "parse", "timestamp": timestamp}))["unix"] == unix


async def test_time_format_and_diff() -> None:
    formatted = await value(
        "time", {"operation": "format", "timestamp": "2024-05-01T12:00:00Z", "format": "%d %b %Y"}
    )
    assert formatted == {"formatted": "01 May 2024"}
    diff = await value(
        "time",
        {"operation": "diff", "timestamp": "2024-05-01T12:00:00Z", "timestamp2": "1714568400"},
    )
    assert diff == {"seconds": 3600.0}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"operation": "parse"}, "parameter 'timestamp' is required"),
        ({"operation": "parse", "timestamp": "yesterday"}, "cannot parse timestamp"),
        ({"operation": "diff", "timestamp": "1"}, "parameter 'timestamp2' is required"),
        ({"operation": "tomorrow"}, "parameter 'operation' must be one of"),
    ],
)
async def test_time_errors_tell_the_model_what_to_fix(args: dict[str, Any], message: str) -> None:
    result = await call("time", args)
    assert result.is_error and result.error_kind == "invalid_parameters"
    assert message in result.for_llm


DATA = {"items": [{"id": 1, "tags": ["a"]}, {"id": 2, "meta": {"id": 9}}], "odd key": True}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("$.items[0].id", 1),
        ("items[1].meta.id", 9),
        ("$.items[-1].id", 2),
        ("$['odd key']", True),
        ('$["items"][0]["tags"][0]', "a"),
        ("$.items[*].id", [1, 2]),
        ("$..id", [1, 2, 9]),
        ("$.items.*.id", [1, 2]),
        ("$.nothing[*]", []),
    ],
)
async def test_json_query(path: str, expected: Any) -> None:
    text = msgspec.json.encode(DATA).decode()
    assert await value("json", {"operation": "query", "data": text, "path": path}) == expected
    assert await value("json", {"operation": "query", "data": DATA, "path": path}) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"operation": "query", "data": DATA, "path": "$.missing"}, "nothing at '$.missing'"),
        ({"operation": "query", "data": DATA, "path": "$.items[x]"}, "cannot read JSONPath"),
        ({"operation": "query", "data": DATA}, "parameter 'path' is required"),
        ({"operation": "parse", "data": "{oops"}, "data is not valid JSON"),
        ({"operation": "parse", "data": 3}, "data must be a string"),
    ],
)
async def test_json_errors_tell_the_model_what_to_fix(args: dict[str, Any], message: str) -> None:
    result = await call("json", args)
    assert result.is_error and message in result.for_llm


async def test_json_parse_stringify_validate() -> None:
    assert await value("json", {"operation": "parse", "data": '{"a": [1, null]}'}) == {
        "a": [1, None]
    }
    text = (await call("json", {"operation": "stringify", "data": {"a": [1, None]}})).for_llm
    assert text == '{"a":[1,null]}'
    assert await value("json", {"operation": "validate", "data": '{"a": 1}'}) == {"valid": True}
    invalid = await value("json", {"operation": "validate", "data": '{"a": }'})
    assert invalid["valid"] is False and "malformed" in invalid["error"]


def test_json_data_accepts_any_value_so_its_schema_has_no_type() -> None:
    assert "type" not in JsonTool.parameters["properties"]["data"]


async def test_json_data_may_be_null_or_a_number() -> None:
    assert (await call("json", {"operation": "stringify", "data": None})).for_llm == "null"
    assert (await call("json", {"operation": "stringify", "data": 2.5})).for_llm == "2.5"


async def test_builtins_answer_when_executed_directly() -> None:
    ctx = ToolContext(agent="a", session_key="s")
    assert (await EchoTool().execute(ctx, {"message": "hi"})).for_llm == "hi"
    parsed = await JsonTool().execute(
        ctx, {"operation": "query", "data": '{"a": {"b": [1, 2]}}', "path": "a.b[1]"}
    )
    assert parsed.for_llm == "2"
    diff = await TimeTool().execute(
        ctx,
        {
            "operation": "diff",
            "timestamp": "2026-01-01T00:00:00Z",
            "timestamp2": "2026-01-02T00:00:00Z",
        },
    )
    assert diff.for_llm == '{"seconds":86400.0}'
