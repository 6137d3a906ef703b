"""Provider parity against local servers: max_completion_tokens, tool_choice, image and
document parts, API keys from the environment, Anthropic prompt caching, usage details."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from clawlog.actors.errors import InvalidArgument, ModelBadRequest
from clawlog.actors.providers import (
    ChatMessage,
    DocumentPart,
    ImagePart,
    ModelRequest,
    TextPart,
    ToolSpec,
    Usage,
)
from clawlog.actors.providers.anthropic import AnthropicModel
from clawlog.actors.providers.openai import OpenAIChatModel
from clawlog.actors.providers.openai_wire import uses_max_completion_tokens
from tests.providers.test_providers import ANTHROPIC_OK, CONVERSATION, FAST, KEY, OPENAI_OK
from tests.providers.wire_server import Canned, WireServer

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
PDF = "JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PD4+CmVuZG9iagp0cmFpbGVyCjw8Pj4KJSVFT0YK"
SECOND_TOOL = ToolSpec(name="now", description="The time", parameters={"type": "object"})


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as running:
        yield running


def openai(server: WireServer, **options: Any) -> OpenAIChatModel:
    options.setdefault("api_key", KEY)
    return OpenAIChatModel(model="m-1", base_url=server.url, retry=FAST, **options)


def anthropic(server: WireServer, **options: Any) -> AnthropicModel:
    options.setdefault("api_key", KEY)
    return AnthropicModel(model="m-1", base_url=server.url, retry=FAST, **options)


async def sent_body(server: WireServer, model: Any, request: ModelRequest) -> dict[str, Any]:
    server.responses.append(Canned(200, OPENAI_OK if model.provider == "openai" else ANTHROPIC_OK))
    async with model:
        await model.complete(request)
    body: dict[str, Any] = server.requests[-1]["body"]
    return body


# --- max_completion_tokens ---


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("o1", True),
        ("o1-mini", True),
        ("o3-mini-2025-01-31", True),
        ("o4-mini", True),
        ("gpt-5", True),
        ("gpt-5-mini", True),
        ("gpt-5.1", True),
        ("openai/o3", True),
        ("gpt-4o", False),
        ("gpt-4.1-mini", False),
        ("gpt-50", False),
        ("omni-moderation", False),
        ("llama3", False),
    ],
)
def test_reasoning_models_are_known_by_name(name: str, expected: bool) -> None:
    assert uses_max_completion_tokens(name) is expected


@pytest.mark.parametrize(
    ("model", "flag", "key"),
    [
        ("o3-mini", None, "max_completion_tokens"),
        ("gpt-5", None, "max_completion_tokens"),
        ("gpt-4o", None, "max_tokens"),
        ("gpt-4o", True, "max_completion_tokens"),
        ("o3-mini", False, "max_tokens"),
    ],
)
async def test_openai_sends_one_token_limit_the_model_takes(
    server: WireServer, model: str, flag: bool | None, key: str
) -> None:
    request = msgspec.structs.replace(CONVERSATION, model=model)
    body = await sent_body(server, openai(server, max_completion_tokens=flag), request)
    other = {"max_tokens", "max_completion_tokens"} - {key}
    assert body[key] == 300 and not other & body.keys()


# --- tool_choice ---


@pytest.mark.parametrize(
    ("choice", "openai_sends", "anthropic_sends"),
    [
        ("auto", "auto", {"type": "auto"}),
        ("none", "none", {"type": "none"}),
        ("required", "required", {"type": "any"}),
        (
            "lookup",
            {"type": "function", "function": {"name": "lookup"}},
            {"type": "tool", "name": "lookup"},
        ),
    ],
)
async def test_tool_choice_maps_per_provider(
    server: WireServer, choice: str, openai_sends: Any, anthropic_sends: Any
) -> None:
    request = msgspec.structs.replace(CONVERSATION, tool_choice=choice)
    assert (await sent_body(server, openai(server), request))["tool_choice"] == openai_sends
    assert (await sent_body(server, anthropic(server), request))["tool_choice"] == anthropic_sends


@pytest.mark.parametrize("client", [openai, anthropic])
async def test_no_tool_choice_is_sent_unless_asked_or_without_tools(
    server: WireServer, client: Any
) -> None:
    assert "tool_choice" not in await sent_body(server, client(server), CONVERSATION)
    request = msgspec.structs.replace(CONVERSATION, tools=[], tool_choice="none")
    assert "tool_choice" not in await sent_body(server, client(server), request)


@pytest.mark.parametrize("client", [openai, anthropic])
@pytest.mark.parametrize(
    ("tools", "choice", "says"),
    [
        ([SECOND_TOOL], "lookup", "offered: now"),
        ([], "lookup", "none are offered"),
        ([], "required", "offers no tools"),
    ],
)
async def test_a_tool_choice_the_request_cannot_honour_is_refused_unsent(
    server: WireServer, client: Any, tools: list[ToolSpec], choice: str, says: str
) -> None:
    request = msgspec.structs.replace(CONVERSATION, tools=tools, tool_choice=choice)
    async with client(server) as model:
        with pytest.raises(ModelBadRequest, match=says):
            await model.complete(request)
    assert server.requests == []


# --- images and documents ---

LOOK = ChatMessage(
    role="user",
    content="What is in these?",
    parts=[
        ImagePart(media_type="image/png", data=PNG, detail="low"),
        ImagePart(url="https://example.org/cat.jpg"),
        DocumentPart(data=PDF, filename="spec.pdf"),
    ],
)


async def test_openai_sends_image_and_file_content_parts(server: WireServer) -> None:
    request = ModelRequest(model="m-1", system="", messages=[LOOK])
    [message] = (await sent_body(server, openai(server), request))["messages"]
    assert message == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in these?"},
            {
                "type": "image_url",
                "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"},
            },
            {"type": "image_url", "image_url": {"url": "https://example.org/cat.jpg"}},
            {
                "type": "file",
                "file": {"filename": "spec.pdf", "file_data": f"data:application/pdf;base64,{PDF}"},
            },
        ],
    }


async def test_anthropic_sends_image_and_document_blocks(server: WireServer) -> None:
    request = ModelRequest(model="m-1", system="", messages=[LOOK])
    [message] = (await sent_body(server, anthropic(server), request))["messages"]
    assert message == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in these?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            {"type": "image", "source": {"type": "url", "url": "https://example.org/cat.jpg"}},
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                "title": "spec.pdf",
            },
        ],
    }


@pytest.mark.parametrize("client", [openai, anthropic])
async def test_text_parts_are_sent_in_their_order_instead_of_the_content(
    server: WireServer, client: Any
) -> None:
    message = ChatMessage(
        role="user",
        content="before after",
        parts=[
            TextPart(text="before"),
            ImagePart(url="https://x.test/a.png"),
            TextPart(text="after"),
        ],
    )
    request = ModelRequest(model="m-1", system="", messages=[message])
    [sent] = (await sent_body(server, client(server), request))["messages"]
    texts = [block.get("text") for block in sent["content"]]
    assert texts == ["before", None, "after"]


async def test_anthropic_tool_results_may_carry_images(server: WireServer) -> None:
    result = ChatMessage(
        role="tool",
        tool_call_id="c1",
        name="screenshot",
        content="the screen",
        parts=[ImagePart(media_type="image/png", data=PNG)],
    )
    request = msgspec.structs.replace(CONVERSATION, messages=[*CONVERSATION.messages[:2], result])
    last = (await sent_body(server, anthropic(server), request))["messages"][-1]
    assert last["content"][0]["content"] == [
        {"type": "text", "text": "the screen"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
    ]


@pytest.mark.parametrize(
    ("message", "says"),
    [
        (
            ChatMessage(
                role="tool", tool_call_id="c1", parts=[ImagePart(url="https://x.test/a.png")]
            ),
            "only text in a tool result",
        ),
        (
            ChatMessage(role="user", parts=[DocumentPart(url="https://x.test/a.pdf")]),
            "documents only as base64",
        ),
    ],
)
async def test_openai_refuses_parts_it_cannot_send_before_sending(
    server: WireServer, message: ChatMessage, says: str
) -> None:
    request = ModelRequest(model="m-1", system="", messages=[message])
    async with openai(server) as model:
        with pytest.raises(ModelBadRequest, match=says):
            await model.complete(request)
    assert server.requests == []


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: ImagePart(), "exactly one of data= .* or url=, not neither"),
        (lambda: ImagePart(media_type="image/png", data=PNG, url="https://x.test"), "not both"),
        (lambda: ImagePart(media_type="image/bmp", data=PNG), "media_type must be one of"),
        (lambda: DocumentPart(media_type="text/plain", data=PDF), "application/pdf"),
    ],
)
def test_parts_that_cannot_be_sent_are_refused_when_made(make: Any, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        make()


def test_parts_survive_an_encode_decode_round_trip() -> None:
    decoded = msgspec.json.decode(msgspec.json.encode(LOOK), type=ChatMessage)
    assert decoded == LOOK
    assert msgspec.json.decode(msgspec.json.encode(LOOK))["parts"][0]["type"] == "image"
    # A message recorded before parts existed still decodes.
    assert msgspec.json.decode(b'{"role": "user", "content": "hi"}', type=ChatMessage).parts == []


# --- API keys from the environment ---


async def test_keys_come_from_the_usual_environment_variables(
    server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env-anthropic")
    await sent_body(server, openai(server, api_key=None), CONVERSATION)
    await sent_body(server, anthropic(server, api_key=None), CONVERSATION)
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-from-env-openai"
    assert server.requests[1]["headers"]["x-api-key"] == "sk-from-env-anthropic"


async def test_a_given_key_wins_and_another_variable_can_be_named(
    server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("MY_GATEWAY_KEY", "sk-gateway")
    await sent_body(server, openai(server), CONVERSATION)
    await sent_body(
        server, openai(server, api_key=None, api_key_env="MY_GATEWAY_KEY"), CONVERSATION
    )
    assert [r["headers"]["authorization"] for r in server.requests] == [
        f"Bearer {KEY}",
        "Bearer sk-gateway",
    ]


@pytest.mark.parametrize(
    ("client", "variable"), [(openai, "OPENAI_API_KEY"), (anthropic, "ANTHROPIC_API_KEY")]
)
def test_no_key_anywhere_is_a_clear_error_naming_the_variable(
    server: WireServer, monkeypatch: pytest.MonkeyPatch, client: Any, variable: str
) -> None:
    monkeypatch.delenv(variable, raising=False)
    with pytest.raises(InvalidArgument, match=f"set the environment variable {variable}"):
        client(server, api_key=None)


async def test_an_empty_key_sends_no_credentials(server: WireServer) -> None:
    await sent_body(server, openai(server, api_key=""), CONVERSATION)
    await sent_body(server, anthropic(server, api_key=""), CONVERSATION)
    assert "authorization" not in server.requests[0]["headers"]
    assert "x-api-key" not in server.requests[1]["headers"]


@pytest.mark.parametrize("bad", [KEY + "\n", " " + KEY, KEY + "\u201d"])
def test_a_key_with_stray_characters_is_refused_without_showing_it(
    server: WireServer, bad: str
) -> None:
    with pytest.raises(InvalidArgument, match="give the bare key") as info:
        openai(server, api_key=bad)
    assert KEY not in str(info.value)


# --- Anthropic prompt caching, usage details ---


async def test_anthropic_caches_the_system_prompt_and_the_tools(server: WireServer) -> None:
    request = msgspec.structs.replace(CONVERSATION, tools=[CONVERSATION.tools[0], SECOND_TOOL])
    body = await sent_body(server, anthropic(server), request)
    assert body["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]
    assert [tool.get("cache_control") for tool in body["tools"]] == [None, {"type": "ephemeral"}]


async def test_anthropic_prompt_caching_can_be_turned_off(server: WireServer) -> None:
    body = await sent_body(server, anthropic(server, prompt_caching=False), CONVERSATION)
    assert body["system"] == "Be brief."
    assert "cache_control" not in body["tools"][0]


async def test_anthropic_usage_counts_cache_reads_and_writes(server: WireServer) -> None:
    usage = {
        "input_tokens": 12,
        "cache_read_input_tokens": 2048,
        "cache_creation_input_tokens": 300,
        "output_tokens": 9,
    }
    server.responses.append(Canned(200, {**ANTHROPIC_OK, "usage": usage}))
    async with anthropic(server) as model:
        answer = await model.complete(CONVERSATION)
    assert answer.usage == Usage(
        input_tokens=2360, output_tokens=9, cached_input_tokens=2048, cache_write_tokens=300
    )


async def test_openai_usage_counts_cached_and_reasoning_tokens(server: WireServer) -> None:
    usage = {
        "prompt_tokens": 2000,
        "completion_tokens": 500,
        "prompt_tokens_details": {"cached_tokens": 1536, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 448},
    }
    server.responses.append(Canned(200, {**OPENAI_OK, "usage": usage}))
    async with openai(server) as model:
        answer = await model.complete(CONVERSATION)
    assert answer.usage == Usage(
        input_tokens=2000, output_tokens=500, cached_input_tokens=1536, reasoning_tokens=448
    )
