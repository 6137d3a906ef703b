"""The HTTP providers through a real System session, against local servers speaking their
wire formats: Anthropic's cache reads and writes reach ``session.model_replied``'s usage and
cost, streamed or not; and a turn streamed through the OpenAI wire leaves the same log as
the same turn sent whole."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import (
    AnthropicModel,
    ModelCatalog,
    ModelSpec,
    OpenAIChatModel,
    Usage,
)
from clawlog.events import RecordedEvent, open_store
from clawlog.events.domain.session import ModelReplied
from tests.providers.test_providers import FAST, KEY
from tests.providers.test_streaming import anthropic_event, openai_chunk
from tests.providers.wire_server import Canned, WireServer, sse

#: Payload fields that differ between two runs of the same turn: its id, what is derived
#: from it (a tool call's idempotency key), clocks.
RUN_SPECIFIC = {"turn_id", "idempotency_key", "duration_ms", "started_at", "ended_at"}

CLAUDE = ModelSpec(
    name="claude-test",
    context_window=200_000,
    max_output_tokens=8_000,
    input_usd_per_mtok=3.0,
    output_usd_per_mtok=15.0,
    cached_input_usd_per_mtok=0.3,
    cache_write_usd_per_mtok=3.75,
)
#: (uncached input, cache writes, cache reads, output) of the turn's two replies: the
#: first writes the system prompt and tools to the cache, the second reads them.
CACHE_USAGE = [(20, 1500, 0, 10), (35, 0, 1500, 6)]


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as running:
        yield running


def anthropic_usage(uncached: int, written: int, read: int, output: int) -> dict[str, int]:
    return {
        "input_tokens": uncached,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
        "output_tokens": output,
    }


def anthropic_reply(block: dict[str, Any], stop: str, usage: tuple[int, ...]) -> Canned:
    return Canned(
        200,
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test-1",
            "content": [block],
            "stop_reason": stop,
            "usage": anthropic_usage(*usage),
        },
    )


def anthropic_stream(block: dict[str, Any], stop: str, usage: tuple[int, ...]) -> Canned:
    """The same reply as SSE: the prompt's counts at the start, the output's at the end."""
    uncached, written, read, output = usage
    start = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test-1",
        "content": [],
        "stop_reason": None,
        "usage": anthropic_usage(uncached, written, read, 1),
    }
    if block["type"] == "text":
        pieces = [
            anthropic_event(
                "content_block_start", index=0, content_block={"type": "text", "text": ""}
            ),
            anthropic_event(
                "content_block_delta", index=0, delta={"type": "text_delta", "text": block["text"]}
            ),
        ]
    else:
        pieces = [
            anthropic_event("content_block_start", index=0, content_block={**block, "input": {}}),
            anthropic_event(
                "content_block_delta",
                index=0,
                delta={"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
            ),
        ]
    return Canned(
        events=[
            anthropic_event("message_start", message=start),
            *pieces,
            anthropic_event("content_block_stop", index=0),
            anthropic_event(
                "message_delta", delta={"stop_reason": stop}, usage={"output_tokens": output}
            ),
            anthropic_event("message_stop"),
        ]
    )


ECHO_CALL = {"type": "tool_use", "id": "tu_1", "name": "echo", "input": {"message": "hi"}}
ANSWER = {"type": "text", "text": "It said hi."}


@pytest.mark.parametrize("streamed", [False, True], ids=["sent", "streamed"])
async def test_anthropic_cache_reads_and_writes_reach_the_replies_usage_and_cost(
    tmp_path: Path, server: WireServer, streamed: bool
) -> None:
    canned = anthropic_stream if streamed else anthropic_reply
    server.responses.append(canned(ECHO_CALL, "tool_use", CACHE_USAGE[0]))
    server.responses.append(canned(ANSWER, "end_turn", CACHE_USAGE[1]))
    model = AnthropicModel(model="claude-test", api_key=KEY, base_url=server.url, retry=FAST)
    catalog = ModelCatalog([CLAUDE])
    async with System.open(tmp_path / "log.db", model_catalog=catalog) as system:
        await system.register_agent(AgentConfig(key="main"), model)
        if streamed:
            async with system.stream("main", "u", "echo hi") as turn:
                [delta async for delta in turn]
            answer = turn.reply
        else:
            answer = await system.send("main", "u", "echo hi")
        await model.aclose()
        events = await system.store.read_stream("session/main/u")
    assert answer == "It said hi."
    replies = [e.event for e in events if isinstance(e.event, ModelReplied)]
    assert [r.usage for r in replies] == [
        Usage(input_tokens=1520, output_tokens=10, cache_write_tokens=1500),
        Usage(input_tokens=1535, output_tokens=6, cached_input_tokens=1500),
    ]
    assert [r.model for r in replies] == ["claude-test-1", "claude-test-1"]
    # 20 plain and 1,500 written tokens, then 35 plain and 1,500 read, at the spec's prices.
    assert [r.cost_usd for r in replies] == [
        pytest.approx((20 * 3.0 + 1500 * 3.75 + 10 * 15.0) / 1e6),
        pytest.approx((35 * 3.0 + 1500 * 0.3 + 6 * 15.0) / 1e6),
    ]
    # Prompt caching marked the system prompt and the last tool, in both requests.
    for request in server.requests:
        body = request["body"]
        assert body.get("stream", False) is streamed
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}


def openai_usage(prompt: int, completion: int, cached: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def openai_turn(streamed: bool) -> list[Canned]:
    """A tool call, then the answer: as two JSON replies, or as two SSE streams whose
    usage block comes last."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "echo", "arguments": '{"message": "hi"}'},
    }
    usages = [openai_usage(300, 12, 0), openai_usage(340, 7, 256)]
    if not streamed:
        messages = [
            ({"role": "assistant", "content": "Let me echo.", "tool_calls": [call]}, "tool_calls"),
            ({"role": "assistant", "content": "It said hi."}, "stop"),
        ]
        return [
            Canned(
                200,
                {
                    "id": "c",
                    "model": "gpt-test-1",
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                },
            )
            for (message, finish), usage in zip(messages, usages, strict=True)
        ]
    arguments = call["function"]["arguments"]
    first_call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "echo", "arguments": ""},
    }
    tail = {"index": 0, "function": {"arguments": arguments[8:]}}
    pieces = [
        [
            openai_chunk({"role": "assistant", "content": "Let me "}),
            openai_chunk({"content": "echo."}),
            openai_chunk({"tool_calls": [first_call]}),
            openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[:8]}}]}),
            openai_chunk({"tool_calls": [tail]}),
            openai_chunk({}, finish="tool_calls"),
        ],
        [
            openai_chunk({"role": "assistant", "content": "It said "}),
            openai_chunk({"content": "hi."}),
            openai_chunk({}, finish="stop"),
        ],
    ]
    return [
        Canned(
            events=[
                *(chunk.replace('"m-1-2025"', '"gpt-test-1"') for chunk in chunks),
                sse({"id": "c", "model": "gpt-test-1", "choices": [], "usage": usage}),
                sse("[DONE]"),
            ]
        )
        for chunks, usage in zip(pieces, usages, strict=True)
    ]


def comparable(events: list[RecordedEvent]) -> list[tuple[str, str, bytes]]:
    """Each event's stream, type and payload bytes without what two runs cannot share."""
    out = []
    for recorded in events:
        payload = {
            key: value
            for key, value in msgspec.to_builtins(recorded.event).items()
            if key not in RUN_SPECIFIC
        }
        out.append((recorded.stream, recorded.type, msgspec.json.encode(payload)))
    return out


async def run_openai_turn(path: Path, server: WireServer, streamed: bool) -> list[RecordedEvent]:
    server.responses.extend(openai_turn(streamed))
    model = OpenAIChatModel(model="gpt-test", api_key=KEY, base_url=server.url, retry=FAST)
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), model)
        if streamed:
            async with system.stream("main", "u", "echo hi") as turn:
                [delta async for delta in turn]
            assert turn.reply == "It said hi."
        else:
            assert await system.send("main", "u", "echo hi") == "It said hi."
        await model.aclose()
    async with await open_store(path) as store:
        return await store.read_all(1, limit=10_000)


async def test_an_openai_turn_leaves_the_same_log_streamed_or_not(tmp_path: Path) -> None:
    with WireServer() as plain_server:
        plain = await run_openai_turn(tmp_path / "plain.db", plain_server, streamed=False)
    with WireServer() as streamed_server:
        streamed = await run_openai_turn(tmp_path / "streamed.db", streamed_server, True)
    assert [r["body"].get("stream", False) for r in streamed_server.requests] == [True, True]
    assert "tool.call_completed" in [e.type for e in plain]
    assert comparable(streamed) == comparable(plain)
    # The same positions too: nothing was recorded once more or once less.
    assert [e.position for e in streamed] == [e.position for e in plain]
    replies = [e.event for e in streamed if isinstance(e.event, ModelReplied)]
    assert [r.usage.cached_input_tokens for r in replies] == [0, 256]
    assert [r.text for r in replies] == ["Let me echo.", "It said hi."]
