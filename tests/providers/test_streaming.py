"""Streaming (SSE) from both HTTP clients against a local server speaking their wire format:
deltas as they arrive, tool calls assembled from pieces, usage at the end, cut streams."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing
from typing import Any

import pytest

from clawlog.actors.errors import (
    MalformedReply,
    ModelAuthError,
    ModelBadRequest,
    ModelRateLimited,
    ModelStreamCut,
)
from clawlog.actors.providers import (
    ModelReply,
    ModelRequest,
    StreamingModel,
    TextDelta,
    ToolCall,
    Usage,
)
from clawlog.actors.providers.anthropic import AnthropicModel
from clawlog.actors.providers.openai import OpenAIChatModel
from clawlog.actors.providers.sse import ServerSentEvent, iter_sse, sse_lines
from tests.providers.test_providers import CONVERSATION, FAST, KEY
from tests.providers.wire_server import Canned, WireServer, sse


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as running:
        yield running


def openai(server: WireServer, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(model="m-1", api_key=KEY, base_url=server.url, retry=FAST, **options)


def anthropic(server: WireServer, **options: Any) -> AnthropicModel:
    return AnthropicModel(model="m-1", api_key=KEY, base_url=server.url, retry=FAST, **options)


async def collect(stream: AsyncIterator[TextDelta | ModelReply]) -> list[TextDelta | ModelReply]:
    return [item async for item in stream]


# --- the wire formats ---


def openai_chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return sse({"id": "c-1", "model": "m-1-2025", "choices": [choice], "usage": None})


OPENAI_USAGE = sse(
    {
        "id": "c-1",
        "model": "m-1-2025",
        "choices": [],
        "usage": {
            "prompt_tokens": 120,
            "completion_tokens": 30,
            "prompt_tokens_details": {"cached_tokens": 64},
            "completion_tokens_details": {"reasoning_tokens": 12},
        },
    }
)
OPENAI_TEXT = [
    openai_chunk({"role": "assistant", "content": ""}),
    openai_chunk({"content": "Hello"}),
    openai_chunk({"content": ", wor"}),
    openai_chunk({"content": "ld."}),
    openai_chunk({}, finish="stop"),
    OPENAI_USAGE,
    sse("[DONE]"),
]


def _piece(index: int, arguments: str, call_id: str = "", name: str = "") -> dict[str, Any]:
    piece: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        piece.update(id=call_id, type="function")
        piece["function"]["name"] = name
    return piece


OPENAI_TOOLS = [
    openai_chunk({"role": "assistant", "content": "Checking."}),
    openai_chunk({"tool_calls": [_piece(0, "", "call_a", "lookup")]}),
    openai_chunk({"tool_calls": [_piece(0, '{"wo')]}),
    openai_chunk({"tool_calls": [_piece(1, '{"word"', "call_b", "lookup")]}),
    openai_chunk({"tool_calls": [_piece(0, 'rd": "claw"}'), _piece(1, ': "log"}')]}),
    openai_chunk({}, finish="tool_calls"),
    OPENAI_USAGE,
    sse("[DONE]"),
]


def anthropic_event(event: str, **data: Any) -> str:
    return sse({"type": event, **data}, event=event)


ANTHROPIC_START = anthropic_event(
    "message_start",
    message={
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m-1-2025",
        "content": [],
        "stop_reason": None,
        "usage": {
            "input_tokens": 20,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 50,
            "output_tokens": 1,
        },
    },
)
ANTHROPIC_END = [
    anthropic_event(
        "message_delta",
        delta={"stop_reason": "tool_use", "stop_sequence": None},
        usage={"output_tokens": 44},
    ),
    anthropic_event("message_stop"),
]


def _block_start(index: int, block: dict[str, Any]) -> str:
    return anthropic_event("content_block_start", index=index, content_block=block)


def _block_delta(index: int, delta: dict[str, Any]) -> str:
    return anthropic_event("content_block_delta", index=index, delta=delta)


ANTHROPIC_STREAM = [
    ANTHROPIC_START,
    anthropic_event("ping"),
    _block_start(0, {"type": "thinking", "thinking": ""}),
    _block_delta(0, {"type": "thinking_delta", "thinking": "the user wants a word"}),
    _block_delta(0, {"type": "signature_delta", "signature": "sig"}),
    anthropic_event("content_block_stop", index=0),
    _block_start(1, {"type": "text", "text": ""}),
    _block_delta(1, {"type": "text_delta", "text": "Let me "}),
    _block_delta(1, {"type": "text_delta", "text": "look."}),
    anthropic_event("content_block_stop", index=1),
    _block_start(2, {"type": "tool_use", "id": "tu_1", "name": "lookup", "input": {}}),
    _block_delta(2, {"type": "input_json_delta", "partial_json": ""}),
    _block_delta(2, {"type": "input_json_delta", "partial_json": '{"word": '}),
    _block_delta(2, {"type": "input_json_delta", "partial_json": '"claw", "n": 2}'}),
    anthropic_event("content_block_stop", index=2),
    _block_start(3, {"type": "tool_use", "id": "tu_2", "name": "now", "input": {}}),
    anthropic_event("content_block_stop", index=3),
    *ANTHROPIC_END,
]


# --- complete streams ---


async def test_openai_streams_text_deltas_then_the_reply_with_usage(server: WireServer) -> None:
    server.responses.append(Canned(events=OPENAI_TEXT))
    async with openai(server) as model:
        assert isinstance(model, StreamingModel)
        items = await collect(model.stream(CONVERSATION))
    assert items[:-1] == [TextDelta("Hello"), TextDelta(", wor"), TextDelta("ld.")]
    assert items[-1] == ModelReply(
        text="Hello, world.",
        stop_reason="stop",
        model="m-1-2025",
        usage=Usage(
            input_tokens=120, output_tokens=30, cached_input_tokens=64, reasoning_tokens=12
        ),
    )
    [sent] = server.requests
    assert sent["body"]["stream"] is True
    assert sent["body"]["stream_options"] == {"include_usage": True}
    assert sent["headers"]["accept"] == "text/event-stream"


async def test_openai_assembles_tool_calls_from_index_keyed_pieces(server: WireServer) -> None:
    server.responses.append(Canned(events=OPENAI_TOOLS))
    async with openai(server) as model:
        items = await collect(model.stream(CONVERSATION))
    assert items[:-1] == [TextDelta("Checking.")]
    reply = items[-1]
    assert isinstance(reply, ModelReply)
    assert reply.tool_calls == [
        ToolCall(id="call_a", name="lookup", arguments='{"word": "claw"}'),
        ToolCall(id="call_b", name="lookup", arguments='{"word": "log"}'),
    ]
    assert (reply.text, reply.stop_reason, reply.usage.input_tokens) == (
        "Checking.",
        "tool_calls",
        120,
    )


async def test_anthropic_streams_text_tool_input_pieces_and_usage(server: WireServer) -> None:
    server.responses.append(Canned(events=ANTHROPIC_STREAM))
    async with anthropic(server) as model:
        assert isinstance(model, StreamingModel)
        items = await collect(model.stream(CONVERSATION))
    assert items[:-1] == [TextDelta("Let me "), TextDelta("look.")]
    assert items[-1] == ModelReply(
        text="Let me look.",
        tool_calls=[
            ToolCall(id="tu_1", name="lookup", arguments='{"word":"claw","n":2}'),
            ToolCall(id="tu_2", name="now", arguments="{}"),
        ],
        stop_reason="tool_use",
        model="m-1-2025",
        # The prompt: 20 uncached + 1000 read from the cache + 50 written to it.
        usage=Usage(
            input_tokens=1070, output_tokens=44, cached_input_tokens=1000, cache_write_tokens=50
        ),
    )
    assert server.requests[0]["body"]["stream"] is True


async def test_anthropic_message_delta_usage_overrides_the_start_counts(
    server: WireServer,
) -> None:
    end = anthropic_event(
        "message_delta",
        delta={"stop_reason": "end_turn"},
        usage={"input_tokens": 25, "cache_read_input_tokens": 1000, "output_tokens": 3},
    )
    events = [
        ANTHROPIC_START,
        _block_start(0, {"type": "text", "text": "Hi"}),
        anthropic_event("content_block_stop", index=0),
        end,
        anthropic_event("message_stop"),
    ]
    server.responses.append(Canned(events=events))
    async with anthropic(server) as model:
        items = await collect(model.stream(CONVERSATION))
    assert items == [
        TextDelta("Hi"),
        ModelReply(
            text="Hi",
            stop_reason="end_turn",
            model="m-1-2025",
            usage=Usage(
                input_tokens=1075,
                output_tokens=3,
                cached_input_tokens=1000,
                cache_write_tokens=50,
            ),
        ),
    ]


@pytest.mark.parametrize(
    ("client", "events", "final"),
    [(openai, OPENAI_TEXT, 4), (anthropic, ANTHROPIC_STREAM, 8)],
)
async def test_deltas_arrive_before_the_stream_ends(
    server: WireServer, client: Any, events: list[str], final: int
) -> None:
    """The server holds the rest of the stream until the first delta is in the client's hand."""
    release = threading.Event()
    server.responses.append(Canned(events=events, stall=release, stall_at=final))
    try:
        async with client(server) as model, aclosing(model.stream(CONVERSATION)) as stream:
            first = await anext(stream)
            assert isinstance(first, TextDelta)
            release.set()
            rest = [item async for item in stream]
    finally:
        release.set()
    assert isinstance(rest[-1], ModelReply)
    # The first delta came while the server still held the rest (not after its stall ran out).
    assert server.stalls_expired == 0


@pytest.mark.parametrize(
    ("client", "events", "complete_body"),
    [
        (
            openai,
            OPENAI_TOOLS,
            {
                "model": "m-1-2025",
                "choices": [
                    {
                        "finish_reason": "tool_calls",
                        "message": {
                            "content": "Checking.",
                            "tool_calls": [
                                {
                                    "id": "call_a",
                                    "function": {
                                        "name": "lookup",
                                        "arguments": '{"word": "claw"}',
                                    },
                                },
                                {
                                    "id": "call_b",
                                    "function": {"name": "lookup", "arguments": '{"word": "log"}'},
                                },
                            ],
                        },
                    }
                ],
                "usage": json.loads(OPENAI_USAGE.removeprefix("data: "))["usage"],
            },
        ),
        (
            anthropic,
            ANTHROPIC_STREAM,
            {
                "model": "m-1-2025",
                "content": [
                    {"type": "thinking", "thinking": "the user wants a word", "signature": "s"},
                    {"type": "text", "text": "Let me look."},
                    {
                        "type": "tool_use",
                        "id": "tu_1",
                        "name": "lookup",
                        "input": {"word": "claw", "n": 2},
                    },
                    {"type": "tool_use", "id": "tu_2", "name": "now", "input": {}},
                ],
                "stop_reason": "tool_use",
                "usage": {
                    "input_tokens": 20,
                    "cache_read_input_tokens": 1000,
                    "cache_creation_input_tokens": 50,
                    "output_tokens": 44,
                },
            },
        ),
    ],
)
async def test_a_streamed_reply_equals_the_same_reply_unstreamed(
    server: WireServer, client: Any, events: list[str], complete_body: dict[str, Any]
) -> None:
    """The log records the same reply whether or not the turn streamed."""
    server.responses.extend([Canned(events=events), Canned(200, complete_body)])
    async with client(server) as model:
        streamed = (await collect(model.stream(CONVERSATION)))[-1]
        completed = await model.complete(CONVERSATION)
    assert streamed == completed
    streamed_body, complete_request = (r["body"] for r in server.requests)
    assert {k: v for k, v in streamed_body.items() if not k.startswith("stream")} == (
        complete_request
    )


# --- cut streams ---


def _garbage(events: list[str], at: int) -> list[str]:
    return [*events[:at], "data: {not json\n\n", *events[at:]]


OPENAI_ERROR = sse({"error": {"message": "boom", "type": "server_error"}})
ANTHROPIC_ERROR = anthropic_event("error", error={"type": "overloaded_error", "message": "busy"})
CUTS = [
    pytest.param(openai, {"events": OPENAI_TEXT, "end_after": 4}, "without its final event"),
    pytest.param(openai, {"events": OPENAI_TEXT, "drop_after": 4}, "broke off after 4 events"),
    pytest.param(openai, {"events": _garbage(OPENAI_TEXT, 3)}, "not valid JSON"),
    pytest.param(openai, {"events": [*OPENAI_TEXT[:3], OPENAI_ERROR]}, "server_error: .* boom"),
    pytest.param(anthropic, {"events": ANTHROPIC_STREAM, "end_after": 9}, "without its final"),
    pytest.param(
        anthropic, {"events": ANTHROPIC_STREAM, "drop_after": 9}, "broke off after 9 events"
    ),
    pytest.param(anthropic, {"events": _garbage(ANTHROPIC_STREAM, 8)}, "not valid JSON"),
    pytest.param(
        anthropic, {"events": [*ANTHROPIC_STREAM[:8], ANTHROPIC_ERROR]}, "overloaded_error: busy"
    ),
]


@pytest.mark.parametrize(("client", "canned", "says"), CUTS)
async def test_a_stream_cut_after_deltas_raises_stream_cut_and_is_not_retried(
    server: WireServer, client: Any, canned: dict[str, Any], says: str
) -> None:
    server.responses.append(Canned(**canned))
    delivered: list[TextDelta | ModelReply] = []
    async with client(server) as model:
        with pytest.raises(ModelStreamCut, match=says) as info:
            async for item in model.stream(CONVERSATION):
                delivered.append(item)
    assert delivered and all(isinstance(item, TextDelta) for item in delivered)
    text = "".join(item.text for item in delivered if isinstance(item, TextDelta))
    assert info.value.partial_text == text
    assert info.value.kind == "stream_cut" and not info.value.retryable
    assert info.value.attempts == 1  # type: ignore[attr-defined]
    assert len(server.requests) == 1
    assert KEY not in str(info.value)


@pytest.mark.parametrize(
    ("client", "cut", "whole"),
    [
        (openai, Canned(events=OPENAI_TEXT[:1], drop_after=1), OPENAI_TEXT),
        (anthropic, Canned(events=[ANTHROPIC_START], end_after=1), ANTHROPIC_STREAM),
        (anthropic, Canned(events=[ANTHROPIC_START, ANTHROPIC_ERROR]), ANTHROPIC_STREAM),
    ],
)
async def test_a_stream_cut_before_the_first_delta_is_retried(
    server: WireServer, client: Any, cut: Canned, whole: list[str]
) -> None:
    server.responses.extend([cut, Canned(events=whole)])
    async with client(server) as model:
        items = await collect(model.stream(CONVERSATION))
    assert isinstance(items[-1], ModelReply) and items[-1].text
    assert len(server.requests) == 2


async def test_a_stream_cut_before_any_delta_every_time_gives_up_after_the_attempts(
    server: WireServer,
) -> None:
    for _ in range(3):
        server.responses.append(Canned(events=[ANTHROPIC_START], drop_after=1))
    async with anthropic(server) as model:
        with pytest.raises(ModelStreamCut, match="broke off") as info:
            await collect(model.stream(CONVERSATION))
    assert info.value.partial_text == "" and info.value.retryable
    assert info.value.attempts == 3  # type: ignore[attr-defined]
    assert len(server.requests) == 3


async def test_a_stalled_stream_is_cut_by_the_timeout(server: WireServer) -> None:
    release = threading.Event()
    server.responses.append(Canned(events=OPENAI_TEXT, stall=release, stall_at=3))
    delivered: list[TextDelta | ModelReply] = []
    try:
        async with openai(server, timeout_s=0.3) as model:
            with pytest.raises(ModelStreamCut, match="ReadTimeout") as info:
                async for item in model.stream(CONVERSATION):
                    delivered.append(item)
    finally:
        release.set()
    assert delivered == [TextDelta("Hello"), TextDelta(", wor")]
    assert info.value.partial_text == "Hello, wor"


async def test_streamed_tool_arguments_that_are_not_json_are_malformed_not_cut(
    server: WireServer,
) -> None:
    bad = [
        openai_chunk({"tool_calls": [_piece(0, '{"word": cl', "call_a", "lookup")]}),
        openai_chunk({}, finish="tool_calls"),
        sse("[DONE]"),
    ]
    server.responses.append(Canned(events=bad))
    async with openai(server) as model:
        with pytest.raises(MalformedReply, match="not valid JSON"):
            await collect(model.stream(CONVERSATION))
    assert len(server.requests) == 1


@pytest.mark.parametrize("client", [openai, anthropic])
async def test_http_errors_of_a_stream_request_map_and_retry_like_requests(
    server: WireServer, client: Any
) -> None:
    events = OPENAI_TEXT if client is openai else ANTHROPIC_STREAM
    server.responses.extend(
        [
            Canned(429, {"error": {"message": "slow down"}}, headers={"retry-after": "0"}),
            Canned(events=events),
            Canned(401, {"error": {"message": f"bad key {KEY}"}}),
        ]
    )
    async with client(server) as model:
        assert isinstance((await collect(model.stream(CONVERSATION)))[-1], ModelReply)
        with pytest.raises(ModelAuthError, match="HTTP 401") as info:
            await collect(model.stream(CONVERSATION))
    assert KEY not in str(info.value)
    assert len(server.requests) == 3


async def test_rate_limits_that_last_give_up_after_the_attempts(server: WireServer) -> None:
    for _ in range(3):
        server.responses.append(Canned(429, {"error": {"message": "slow down"}}))
    async with openai(server) as model:
        with pytest.raises(ModelRateLimited):
            await collect(model.stream(CONVERSATION))
    assert len(server.requests) == 3


async def test_a_server_that_ignores_stream_gives_one_delta_and_the_reply(
    server: WireServer,
) -> None:
    body = {"model": "m-1", "choices": [{"finish_reason": "stop", "message": {"content": "Hi."}}]}
    server.responses.append(Canned(200, body))
    async with openai(server) as model:
        items = await collect(model.stream(CONVERSATION))
    assert items == [TextDelta("Hi."), ModelReply(text="Hi.", stop_reason="stop", model="m-1")]


async def test_closing_a_stream_early_leaves_the_client_usable(server: WireServer) -> None:
    server.responses.extend([Canned(events=OPENAI_TEXT), Canned(events=OPENAI_TEXT)])
    async with openai(server) as model:
        async with aclosing(model.stream(CONVERSATION)) as stream:
            assert await anext(stream) == TextDelta("Hello")
        items = await collect(model.stream(CONVERSATION))
    assert isinstance(items[-1], ModelReply) and items[-1].text == "Hello, world."


# --- the SSE parser ---


async def _lines(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        yield line


async def test_sse_events_join_data_lines_skip_comments_and_drop_an_unfinished_event() -> None:
    lines = _lines(
        ": a comment",
        "event: first",
        "data: one",
        "data:two",
        "id: 7",
        "",
        "",
        "data: {}",
        "",
        "event: lonely",
        "",
        "data: cut off",
    )
    assert [e async for e in iter_sse(lines)] == [
        ServerSentEvent(event="first", data="one\ntwo"),
        ServerSentEvent(event="message", data="{}"),
    ]


async def test_an_empty_model_request_stream_still_checks_its_tool_choice(
    server: WireServer,
) -> None:
    request = ModelRequest(model="m-1", system="", messages=[], tool_choice="nothing")
    async with openai(server) as model:
        with pytest.raises(ModelBadRequest, match="tool_choice='nothing'"):
            await collect(model.stream(request))
    assert server.requests == []


async def _chunks(*chunks: str) -> AsyncIterator[str]:
    for chunk in chunks:
        yield chunk


async def _split(text: str, size: int) -> list[str]:
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    return [line async for line in sse_lines(_chunks(*pieces))]


@pytest.mark.parametrize("size", [1, 2, 3, 1000])
async def test_sse_lines_end_at_crlf_lf_or_cr_wherever_the_chunks_split(size: int) -> None:
    text = "a\r\nb\nc\rd\r\n\r\ne\r\r\nf"
    assert await _split(text, size) == ["a", "b", "c", "d", "", "e", "", "f"]


async def test_sse_lines_keep_the_unicode_line_breaks_json_may_hold() -> None:
    """U+2028, U+2029 and U+0085 may stand unescaped in a JSON string: not line ends."""
    text = 'data: {"text": "one\u2028two\u2029three\x85four\x0bfive"}\n\n'
    assert await _split(text, 7) == [text[:-2], ""]
    [event] = [e async for e in iter_sse(sse_lines(_chunks(text)))]
    assert event.data == text.removeprefix("data: ").removesuffix("\n\n")


async def test_sse_events_skip_a_byte_order_mark_opening_the_stream() -> None:
    lines = sse_lines(_chunks("\ufeffevent: first\r\ndata: x\r\n\r\n"))
    assert [e async for e in iter_sse(lines)] == [ServerSentEvent(event="first", data="x")]


def _raw_openai_text(text: str) -> str:
    """A text chunk as a server that does not escape non-ASCII characters writes it."""
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
    return "data: " + json.dumps({"model": "m-1", "choices": [choice]}, ensure_ascii=False) + "\n\n"


async def test_a_streamed_text_holding_a_unicode_line_separator_arrives_whole(
    server: WireServer,
) -> None:
    events = [
        _raw_openai_text("line one\u2028line two"),
        openai_chunk({}, finish="stop"),
        sse("[DONE]"),
    ]
    server.responses.append(Canned(events=events))
    async with openai(server) as model:
        items = await collect(model.stream(CONVERSATION))
    assert items[0] == TextDelta("line one\u2028line two")


async def test_anthropic_null_counts_in_message_delta_keep_the_start_counts(
    server: WireServer,
) -> None:
    """The API sends the input counts of message_delta as null when it has none new."""
    end = anthropic_event(
        "message_delta",
        delta={"stop_reason": "end_turn", "stop_sequence": None},
        usage={
            "input_tokens": None,
            "cache_creation_input_tokens": None,
            "cache_read_input_tokens": None,
            "output_tokens": 9,
        },
    )
    events = [
        ANTHROPIC_START,
        _block_start(0, {"type": "text", "text": ""}),
        _block_delta(0, {"type": "text_delta", "text": "Hi"}),
        anthropic_event("content_block_stop", index=0),
        end,
        anthropic_event("message_stop"),
    ]
    server.responses.append(Canned(events=events))
    async with anthropic(server) as model:
        reply = (await collect(model.stream(CONVERSATION)))[-1]
    assert isinstance(reply, ModelReply)
    assert reply.usage == Usage(
        input_tokens=1070, output_tokens=9, cached_input_tokens=1000, cache_write_tokens=50
    )


async def test_an_anthropic_error_event_before_message_start_is_mapped_and_retried(
    server: WireServer,
) -> None:
    auth = anthropic_event("error", error={"type": "authentication_error", "message": "no"})
    server.responses.extend([Canned(events=[ANTHROPIC_ERROR]), Canned(events=ANTHROPIC_STREAM)])
    server.responses.append(Canned(events=[auth]))
    async with anthropic(server) as model:
        assert isinstance((await collect(model.stream(CONVERSATION)))[-1], ModelReply)
        with pytest.raises(ModelAuthError, match="authentication_error: no"):
            await collect(model.stream(CONVERSATION))
    assert len(server.requests) == 3


def _done(*deltas: dict[str, Any]) -> list[str]:
    return [
        *(openai_chunk(delta) for delta in deltas),
        openai_chunk({}, finish="tool_calls"),
        sse("[DONE]"),
    ]


OPENAI_CALL_STREAMS = [
    pytest.param(
        _done(
            {"tool_calls": [_piece(0, '{"word": "claw"}', "call_a", "lookup")]},
            {"tool_calls": [_piece(0, '{"word": "log"}', "call_b", "lookup")]},
        ),
        id="every-call-at-index-0 (Ollama)",
    ),
    pytest.param(
        _done(
            {"tool_calls": [{"id": "call_a", "function": {"name": "lookup", "arguments": ""}}]},
            {"tool_calls": [{"function": {"arguments": '{"word": "claw"}'}}]},
            {"tool_calls": [{"id": "call_b", "function": {"name": "lookup", "arguments": ""}}]},
            {"tool_calls": [{"function": {"arguments": '{"word": "log"}'}}]},
        ),
        id="no-index",
    ),
    pytest.param(
        _done(
            {"tool_calls": [_piece(0, '{"word": ', "call_a", "lookup")]},
            {"tool_calls": [_piece(0, '"claw"}', "call_a", "lookup")]},
            {"tool_calls": [_piece(1, '{"word": "log"}', "call_b", "lookup")]},
        ),
        id="the-id-in-every-piece (vLLM)",
    ),
    pytest.param(
        _done(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "function": {"name": "lookup", "arguments": {"word": word}},
                    }
                    for index, call_id, word in ((0, "call_a", "claw"), (1, "call_b", "log"))
                ]
            },
        ),
        id="arguments-as-objects",
    ),
]


@pytest.mark.parametrize("events", OPENAI_CALL_STREAMS)
async def test_openai_compatible_servers_tool_call_pieces_assemble_into_their_calls(
    server: WireServer, events: list[str]
) -> None:
    server.responses.append(Canned(events=events))
    async with openai(server) as model:
        reply = (await collect(model.stream(CONVERSATION)))[-1]
    assert isinstance(reply, ModelReply)
    assert [(c.id, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("call_a", {"word": "claw"}),
        ("call_b", {"word": "log"}),
    ]


async def test_openai_keep_alive_events_without_data_are_skipped(server: WireServer) -> None:
    server.responses.append(Canned(events=[OPENAI_TEXT[0], "data:\n\n", *OPENAI_TEXT[1:]]))
    async with openai(server) as model:
        reply = (await collect(model.stream(CONVERSATION)))[-1]
    assert isinstance(reply, ModelReply) and reply.text == "Hello, world."


async def test_an_openai_refusal_is_the_reply_text_streamed_or_not(server: WireServer) -> None:
    refusal = "I can't help with that."
    events = [
        openai_chunk({"role": "assistant", "content": None, "refusal": ""}),
        openai_chunk({"refusal": "I can't "}),
        openai_chunk({"refusal": "help with that."}),
        openai_chunk({}, finish="stop"),
        sse("[DONE]"),
    ]
    message = {"role": "assistant", "content": None, "refusal": refusal}
    body = {"model": "m-1-2025", "choices": [{"finish_reason": "stop", "message": message}]}
    server.responses.extend([Canned(events=events), Canned(200, body)])
    async with openai(server) as model:
        streamed = await collect(model.stream(CONVERSATION))
        completed = await model.complete(CONVERSATION)
    assert streamed[:-1] == [TextDelta("I can't "), TextDelta("help with that.")]
    assert streamed[-1] == completed and completed.text == refusal


async def test_a_stream_with_a_bom_and_crlf_or_cr_line_ends_reads_the_same(
    server: WireServer,
) -> None:
    crlf = [event.replace("\n", "\r\n") for event in ANTHROPIC_STREAM]
    text_first = OPENAI_TEXT[1:]  # the mark then opens a line that carries text
    cr = [event.replace("\n", "\r") for event in text_first]
    cr[0] = "\ufeff" + cr[0]
    server.responses.extend(
        [Canned(events=ANTHROPIC_STREAM), Canned(events=crlf), Canned(events=text_first)]
    )
    server.responses.append(Canned(events=cr))
    async with anthropic(server) as model:
        expected = await collect(model.stream(CONVERSATION))
        assert await collect(model.stream(CONVERSATION)) == expected
    async with openai(server) as model:
        expected = await collect(model.stream(CONVERSATION))
        assert await collect(model.stream(CONVERSATION)) == expected
    assert len(server.requests) == 4
