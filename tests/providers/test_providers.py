"""The OpenAI-compatible and Anthropic clients against a local server speaking their wire format."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from clawlog.actors.errors import (
    MalformedReply,
    ModelAuthError,
    ModelBadRequest,
    ModelRateLimited,
    ModelServerError,
    ModelTimeout,
    ModelUnavailable,
)
from clawlog.actors.providers import ChatMessage, ModelRequest, ToolCall, ToolSpec
from clawlog.actors.providers.anthropic import AnthropicModel
from clawlog.actors.providers.openai import OpenAIChatModel
from clawlog.actors.providers.retry import RetryPolicy
from tests.providers.wire_server import Canned, WireServer

KEY = "sk-test-0123456789abcdefghijklmnop"
FAST = RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.01)
TOOL = ToolSpec(
    name="lookup",
    description="Look a word up",
    parameters={"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
)
CONVERSATION = ModelRequest(
    model="m-1",
    system="Be brief.",
    tools=[TOOL],
    max_tokens=300,
    messages=[
        ChatMessage(role="user", content="define claw"),
        ChatMessage(
            role="assistant",
            content="Let me check.",
            tool_calls=[ToolCall(id="c1", name="lookup", arguments='{"word":"claw"}')],
        ),
        ChatMessage(role="tool", content="a curved nail", tool_call_id="c1", name="lookup"),
    ],
)


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as running:
        yield running


def openai(server: WireServer, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(model="m-1", api_key=KEY, base_url=server.url, retry=FAST, **options)


def anthropic(server: WireServer, **options: Any) -> AnthropicModel:
    return AnthropicModel(model="m-1", api_key=KEY, base_url=server.url, retry=FAST, **options)


OPENAI_OK = {
    "id": "chatcmpl-1",
    "model": "m-1",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"word":"log"}'},
                    }
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 42, "completion_tokens": 7},
}
ANTHROPIC_OK = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m-1",
    "content": [
        {"type": "text", "text": "Checking. "},
        {"type": "tool_use", "id": "tu_1", "name": "lookup", "input": {"word": "log"}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 40, "output_tokens": 9},
}


async def test_openai_request_shape_and_reply(server: WireServer) -> None:
    server.responses.append(Canned(200, OPENAI_OK))
    async with openai(server) as model:
        answer = await model.complete(CONVERSATION)
    [sent] = server.requests
    assert sent["path"] == "/chat/completions"
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"
    assert sent["body"] == {
        "model": "m-1",
        "max_tokens": 300,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "define claw"},
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"word":"claw"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a curved nail"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "lookup",
                    "description": "Look a word up",
                    "parameters": TOOL.parameters,
                },
            }
        ],
    }
    assert answer.tool_calls == [ToolCall(id="c2", name="lookup", arguments='{"word":"log"}')]
    assert (answer.stop_reason, answer.usage.input_tokens, answer.usage.output_tokens) == (
        "tool_calls",
        42,
        7,
    )


async def test_anthropic_request_shape_and_reply(server: WireServer) -> None:
    server.responses.append(Canned(200, ANTHROPIC_OK))
    async with anthropic(server) as model:
        answer = await model.complete(CONVERSATION)
    [sent] = server.requests
    assert sent["path"] == "/v1/messages"
    assert sent["headers"]["x-api-key"] == KEY
    assert sent["headers"]["anthropic-version"] == "2023-06-01"
    assert sent["body"] == {
        "model": "m-1",
        "max_tokens": 300,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "define claw"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"word": "claw"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "c1",
                        "content": "a curved nail",
                        "is_error": False,
                    }
                ],
            },
        ],
        "tools": [
            {
                "name": "lookup",
                "description": "Look a word up",
                "input_schema": TOOL.parameters,
                "cache_control": {"type": "ephemeral"},
            }
        ],
    }
    assert answer.text == "Checking. "
    assert answer.tool_calls == [ToolCall(id="tu_1", name="lookup", arguments='{"word":"log"}')]
    assert (answer.stop_reason, answer.usage.input_tokens) == ("tool_use", 40)


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (401, ModelAuthError),
        (403, ModelAuthError),
        (400, ModelBadRequest),
        (404, ModelBadRequest),
        (500, ModelServerError),
        (503, ModelServerError),
        (429, ModelRateLimited),
    ],
)
@pytest.mark.parametrize("client", [openai, anthropic])
async def test_status_codes_map_to_error_kinds(
    server: WireServer, client: Any, status: int, error: type[Exception]
) -> None:
    for _ in range(3):
        server.responses.append(Canned(status, {"error": {"message": f"bad thing {KEY}"}}))
    async with client(server) as model:
        with pytest.raises(error) as info:
            await model.complete(CONVERSATION)
    assert KEY not in str(info.value) and f"HTTP {status}" in str(info.value)
    retried = status in (429, 500, 503)
    assert len(server.requests) == (3 if retried else 1)
    assert info.value.attempts == (3 if retried else 1)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("client", "ok"), [(openai, OPENAI_OK), (anthropic, ANTHROPIC_OK)])
async def test_retries_on_429_with_retry_after_then_succeeds(
    server: WireServer, client: Any, ok: dict[str, Any]
) -> None:
    server.responses.extend(
        [
            Canned(429, {"error": {"message": "slow down"}}, headers={"retry-after": "0.01"}),
            Canned(502, {"error": {"message": "gateway"}}),
            Canned(200, ok),
        ]
    )
    async with client(server) as model:
        answer = await model.complete(CONVERSATION)
    assert answer.tool_calls and len(server.requests) == 3


@pytest.mark.parametrize("client", [openai, anthropic])
@pytest.mark.parametrize(
    "canned",
    [
        Canned(200, raw=b"{not json"),
        Canned(200, raw=b'{"choices": [{"message": {"content": "cut'),
        Canned(200, {"unexpected": True}),
        Canned(200, {"choices": [], "content": "no list"}),
    ],
)
async def test_malformed_and_truncated_replies_are_clear_errors(
    server: WireServer, client: Any, canned: Canned
) -> None:
    server.responses.append(canned)
    async with client(server) as model:
        with pytest.raises(MalformedReply):
            await model.complete(CONVERSATION)


async def test_openai_tool_arguments_that_are_not_json_are_malformed(server: WireServer) -> None:
    bad = {
        "choices": [
            {
                "finish_reason": "tool_calls",
                "message": {
                    "tool_calls": [
                        {
                            "id": "x",
                            "type": "function",
                            "function": {"name": "lookup", "arguments": "{word:"},
                        }
                    ]
                },
            }
        ]
    }
    server.responses.append(Canned(200, bad))
    async with openai(server) as model:
        with pytest.raises(MalformedReply, match="arguments are not valid JSON"):
            await model.complete(CONVERSATION)


async def test_timeout_and_connection_refused(server: WireServer) -> None:
    release = threading.Event()
    for _ in range(3):
        server.responses.append(Canned(200, OPENAI_OK, stall=release))
    try:
        async with openai(server, timeout_s=0.2) as model:
            with pytest.raises(ModelTimeout):
                await model.complete(CONVERSATION)
    finally:
        release.set()
    async with OpenAIChatModel(
        model="m", api_key=KEY, base_url="http://127.0.0.1:9", retry=FAST
    ) as model:
        with pytest.raises(ModelUnavailable) as info:
            await model.complete(CONVERSATION)
    assert KEY not in str(info.value)


async def test_a_malformed_reply_in_a_session_becomes_a_model_failed_event(
    server: WireServer, tmp_path: Any
) -> None:
    from clawlog.actors import System, TurnFailedError
    from clawlog.actors.agents import AgentConfig

    server.responses.append(Canned(200, raw=b'{"choices": [{"message": '))
    async with System.open(tmp_path / "log.db") as system:
        model = openai(server)
        await system.register_agent(AgentConfig(key="main"), model)
        with pytest.raises(TurnFailedError, match="malformed_reply"):
            await system.send("main", "u", "hello")
        failed = [
            e.event
            for e in await system.store.read_stream("session/main/u")
            if e.type == "session.model_failed"
        ]
        assert failed[0].kind == "malformed_reply"  # type: ignore[union-attr]
        await model.aclose()
