"""Images, documents and more text sent with a user's message (``System.send(...,
parts=[...])``): checked at the boundary, refused before anything is recorded when the
agent's model cannot take them, recorded on ``session.turn_started``, rebuilt into the
conversation from the log, sent on the wire, and re-run to a match."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from clawlog.actors import ArgumentTypeError, InvalidArgument, MessageTooLarge, System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.agents.session_state import SessionState, apply_session_event
from clawlog.actors.agents.summarizer import transcript
from clawlog.actors.boundary import Limits
from clawlog.actors.providers import (
    AnthropicModel,
    DocumentPart,
    ImagePart,
    ModelReply,
    ModelRequest,
    OpenAIChatModel,
    ScriptedModel,
    TextPart,
    call,
    reply,
)
from clawlog.actors.replay import rerun
from clawlog.events import NO_STREAM, EventMetadata, EventStore, event_tag, open_store
from clawlog.events.domain.session import (
    ModelReplied,
    ModelRequested,
    TurnCompleted,
    TurnStarted,
)
from clawlog.events.envelope import NewRecord
from clawlog.projections import ProjectionRunner, ReadModels, SessionHistoryReader
from clawlog.projections.read_models.session_history import SessionHistory
from tests.agents.support import types
from tests.providers.test_providers import ANTHROPIC_OK, FAST, KEY, OPENAI_OK
from tests.providers.test_streaming import openai_chunk
from tests.providers.wire_server import Canned, WireServer

#: A 1x1 PNG and a tiny PDF, base64.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
PDF = "JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PD4+CmVuZG9iagp0cmFpbGVyCjw8Pj4KJSVFT0YK"
IMAGE = ImagePart(media_type="image/png", data=PNG)
STREAM = "session/main/u"


def echo_user(request: ModelRequest) -> ModelReply:
    """Answers with what the last user message carried."""
    last = [m for m in request.messages if m.role == "user"][-1]
    kinds = [type(part).__name__ for part in last.parts]
    return reply(f"{last.content} + {kinds}")


class TextOnlyModel:
    """A model without ``check_part``: it says nothing about parts, so it takes text only."""

    name = "text-only"
    provider = "custom"

    async def complete(self, request: ModelRequest) -> ModelReply:
        return reply("only text here")


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as running:
        yield running


async def started_events(system: System) -> list[TurnStarted]:
    events = await system.store.read_stream(STREAM)
    return [e.event for e in events if isinstance(e.event, TurnStarted)]


# --- the turn's start records them; the model gets them after the text ---


async def test_parts_reach_the_model_after_the_text_and_are_recorded_on_the_start(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(echo_user)
    parts = [IMAGE, TextPart(text="and the second page:"), DocumentPart(data=PDF)]
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        answer = await system.send("main", "u", "what is this?", parts=parts)
        [started] = await started_events(system)
    assert answer == "what is this? + ['TextPart', 'ImagePart', 'TextPart', 'DocumentPart']"
    assert started.text == "what is this?" and started.parts == parts
    [request] = model.requests
    sent = request.messages[-1]
    assert sent.content == "what is this?"
    assert sent.parts == [TextPart(text="what is this?"), *parts]


async def test_a_streamed_turn_takes_parts_too(tmp_path: Path) -> None:
    model = ScriptedModel(echo_user)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        async with system.stream("main", "u", "look", parts=[IMAGE]) as turn:
            text = "".join([delta.text async for delta in turn])
        [started] = await started_events(system)
    assert text == turn.reply == "look + ['ImagePart']"
    assert started.parts == [IMAGE]
    assert model.requests[0].messages[-1].parts == [IMAGE]  # no text part: content first


async def test_the_conversation_rebuilt_from_the_log_keeps_the_parts(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(echo_user))
        await system.send("main", "u", "first", parts=[IMAGE])
    model = ScriptedModel(echo_user)
    async with System.open(tmp_path / "log.db") as system:  # a new process: folded again
        await system.register_agent(AgentConfig(key="main"), model)
        await system.send("main", "u", "second")
    first = model.requests[0].messages[0]
    assert (first.content, first.parts) == ("first", [IMAGE])
    assert model.requests[0].messages[-1].parts == []


async def test_text_parts_are_scrubbed_like_the_text_and_images_are_kept_as_given(
    tmp_path: Path,
) -> None:
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    model = ScriptedModel(echo_user)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        await system.send(
            "main", "u", f"my key {secret}", parts=[TextPart(text=f"again: {secret}"), IMAGE]
        )
        [started] = await started_events(system)
        raw = msgspec.json.encode(await system.store.read_stream(STREAM))
    assert secret not in started.text and secret not in raw.decode()
    assert started.parts == [TextPart(text="again: [REDACTED]"), IMAGE]
    # The model is sent the conversation as the log holds it.
    assert model.requests[0].messages[-1].parts[1] == TextPart(text="again: [REDACTED]")


# --- refused before anything is recorded ---


async def test_a_url_holding_a_secret_is_refused_and_nothing_is_recorded(tmp_path: Path) -> None:
    url = "https://img.example.com/cat.png?token=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(echo_user))
        with pytest.raises(
            InvalidArgument, match=r"parts\[0\]: the URL of an image holds a secret"
        ):
            await system.send("main", "u", "see", parts=[ImagePart(url=url)])
        assert await started_events(system) == []
        # The session is usable: the next message runs.
        assert await system.send("main", "u", "hi") == "hi + []"


async def test_a_model_that_does_not_say_it_takes_images_refuses_them_before_recording(
    tmp_path: Path,
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), TextOnlyModel())
        with pytest.raises(InvalidArgument) as refused:
            await system.send("main", "u", "see", parts=[IMAGE])
        assert refused.value.parameter == "parts"
        assert "takes text only" in str(refused.value) and "an image" in str(refused.value)
        with pytest.raises(InvalidArgument, match="takes text only"):
            async with system.stream("main", "u", "see", parts=[IMAGE]) as turn:
                [delta async for delta in turn]
        assert await started_events(system) == []
        # Text parts go to any model.
        assert await system.send("main", "u", "a", parts=[TextPart(text="b")]) == "only text here"


async def test_openai_refuses_a_document_by_url_before_the_turn_starts(
    tmp_path: Path, server: WireServer
) -> None:
    model = OpenAIChatModel(model="m-1", api_key=KEY, base_url=server.url, retry=FAST)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        with pytest.raises(InvalidArgument, match="documents only as base64 data"):
            await system.send(
                "main", "u", "read", parts=[DocumentPart(url="https://example.com/a.pdf")]
            )
        await model.aclose()
        assert await started_events(system) == []
    assert server.requests == []


@pytest.mark.parametrize(
    ("parts", "error", "says"),
    [
        ("an image", ArgumentTypeError, "must be a list"),
        ([b"png bytes"], ArgumentTypeError, r"parts\[0\] is of type bytes"),
        ([ImagePart(media_type="image/png", data="not base64!")], InvalidArgument, "not base64"),
        ([ImagePart(media_type="image/jpeg", data=PNG)], InvalidArgument, "looks like image/png"),
        ([DocumentPart(data=PNG)], InvalidArgument, "not application/pdf"),
        ([ImagePart(url="ftp://example.com/a.png")], InvalidArgument, "http"),
        ([ImagePart(url=f"data:image/png;base64,{PNG}")], InvalidArgument, "data: URL"),
        ([ImagePart(url="https://example.com/a.png", detail="huge")], InvalidArgument, "detail"),
        ([TextPart(text="  ")], InvalidArgument, "without text"),
        ([ImagePart(media_type="image/png", data=b"\x89PNG")], ArgumentTypeError, "data must be"),
    ],
)
async def test_the_boundary_refuses_wrong_parts_naming_them(
    tmp_path: Path, parts: Any, error: type[Exception], says: str
) -> None:
    model = ScriptedModel(echo_user)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        with pytest.raises(error, match=says) as refused:
            await system.send("main", "u", "see", parts=parts)
        assert type(refused.value) is error and refused.value.parameter == "parts"  # type: ignore[attr-defined]
        with pytest.raises(error, match=says):
            system.stream("main", "u", "see", parts=parts)
        assert await system.store.read_stream(STREAM) == [] and model.requests == []


async def test_an_images_bytes_count_against_the_message_limit(tmp_path: Path) -> None:
    limit = 4096
    big = base64.b64encode(base64.b64decode(PNG) + b"\0" * 3000).decode()  # about 4.1 kB
    async with System.open(tmp_path / "log.db", limits=Limits(max_message_bytes=limit)) as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(echo_user))
        with pytest.raises(MessageTooLarge) as refused:
            await system.send(
                "main", "u", "see", parts=[ImagePart(media_type="image/png", data=big)]
            )
        assert refused.value.parameter == "parts" and refused.value.limit == limit
        assert refused.value.size == len("see") + len(big) + len("image/png")
        small = base64.b64encode(base64.b64decode(PNG) + b"\0" * 2000).decode()
        sent = [ImagePart(media_type="image/png", data=small)]
        assert await system.send("main", "u", "see", parts=sent) == "see + ['ImagePart']"
        # The text alone is under the limit; the same text with the image is not.
        with pytest.raises(MessageTooLarge, match="with its parts"):
            await system.send("main", "u", "x" * 2000, parts=sent)


# --- on the wire ---


async def test_openai_and_anthropic_get_the_image_as_their_content_blocks(
    tmp_path: Path, server: WireServer
) -> None:
    openai = OpenAIChatModel(model="m-1", api_key=KEY, base_url=server.url, retry=FAST)
    anthropic = AnthropicModel(model="m-1", api_key=KEY, base_url=server.url, retry=FAST)
    final = {
        **OPENAI_OK,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "a dot"},
            }
        ],
    }
    server.responses.append(Canned(200, final))
    server.responses.append(
        Canned(
            200,
            {
                **ANTHROPIC_OK,
                "content": [{"type": "text", "text": "a dot"}],
                "stop_reason": "end_turn",
            },
        )
    )
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="oa"), openai)
        await system.register_agent(AgentConfig(key="an"), anthropic)
        assert await system.send("oa", "u", "what is it?", parts=[IMAGE]) == "a dot"
        assert await system.send("an", "u", "what is it?", parts=[IMAGE]) == "a dot"
        await openai.aclose()
        await anthropic.aclose()
    openai_user = server.requests[0]["body"]["messages"][-1]
    assert openai_user == {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is it?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        ],
    }
    anthropic_user = server.requests[1]["body"]["messages"][-1]
    assert anthropic_user == {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is it?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ],
    }


async def test_a_streamed_openai_turn_sends_the_parts_the_same_way(
    tmp_path: Path, server: WireServer
) -> None:
    model = OpenAIChatModel(model="m-1", api_key=KEY, base_url=server.url, retry=FAST)
    server.responses.append(
        Canned(events=[openai_chunk({"content": "a dot"}, finish="stop"), "data: [DONE]\n\n"])
    )
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        async with system.stream("main", "u", "what?", parts=[IMAGE]) as turn:
            [delta async for delta in turn]
        await model.aclose()
    assert turn.reply == "a dot"
    content = server.requests[0]["body"]["messages"][-1]["content"]
    assert [block["type"] for block in content] == ["text", "image_url"]


# --- replay, history, summaries, old logs ---


async def test_a_session_with_parts_re_runs_to_a_match(tmp_path: Path) -> None:
    def planner(request: ModelRequest) -> ModelReply:
        if request.messages[-1].role == "user":
            return call("time", call_id=f"c{len(request.messages)}")
        return reply(f"seen {len(request.messages[0].parts)} parts")

    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(planner))
        await system.send("main", "u", "first", parts=[IMAGE, DocumentPart(data=PDF)])
        await system.send("main", "u", "second", parts=[TextPart(text="more")])
    async with await open_store(tmp_path / "log.db") as store:
        report = await rerun(store, "main", "u")
    assert report.matched, report.divergence
    assert report.turns == 2 and report.model_replies == 4
    assert report.context == []  # the re-run sent the model the same messages, parts and all


async def test_the_history_line_of_a_user_message_names_its_parts(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(echo_user))
        parts = [IMAGE, DocumentPart(data=PDF, filename="spec.pdf"), TextPart(text="thanks")]
        await system.send("main", "u", "look", parts=parts)
    async with (
        await open_store(tmp_path / "log.db") as store,
        ProjectionRunner(store, tmp_path / "views.db", [SessionHistory()]) as runner,
    ):
        await runner.catch_up()
    async with ReadModels(tmp_path / "views.db") as models:
        [line] = await SessionHistoryReader(models).page(STREAM, kinds=["user"])
    assert line.text == "look [image: image/png] [document: spec.pdf] thanks"


def test_the_summary_transcript_names_what_it_cannot_show() -> None:
    state = apply_session_event(
        SessionState(),
        TurnStarted(
            turn_id="t",
            text="what is on these?",
            parts=[IMAGE, DocumentPart(data=PDF, filename="a.pdf")],
        ),
        lambda event: None,
    )
    lines = transcript(state.messages, 10_000).split("\n\n")
    assert lines == [
        "User: what is on these?",
        "User attached an image (image/png)",
        "User attached a document (a.pdf)",
    ]


async def write_raw(
    store: EventStore, stream: str, version: int, events: list[dict[str, Any]]
) -> None:
    """Payloads as a clawlog from before parts wrote them (no ``parts``, ``tool_choice``)."""
    for offset, body in enumerate(events):
        payload = msgspec.msgpack.encode(body)
        record = NewRecord(body["type"], 1, payload)
        expected = NO_STREAM if version + offset == 0 else version + offset
        await store.backend.append(stream, [record], expected, EventMetadata())


async def test_a_turn_recorded_before_parts_existed_still_decodes_and_folds(tmp_path: Path) -> None:
    old = [
        {"type": "session.started", "agent": "main", "session_key": "u"},
        {"type": event_tag(TurnStarted), "turn_id": "t1", "text": "old question"},
        {"type": event_tag(ModelRequested), "turn_id": "t1", "iteration": 1, "model": "scripted"},
        {"type": event_tag(ModelReplied), "turn_id": "t1", "iteration": 1, "text": "old answer"},
        {"type": event_tag(TurnCompleted), "turn_id": "t1", "reply": "old answer", "iterations": 1},
    ]
    async with await open_store(tmp_path / "log.db") as store:
        await write_raw(store, STREAM, 0, old)
        read = await store.read_stream(STREAM)
    assert types(read) == [body["type"] for body in old]
    started = read[1].event
    assert isinstance(started, TurnStarted) and started.parts == []
    requested = read[2].event
    assert isinstance(requested, ModelRequested) and requested.tool_choice is None
    model = ScriptedModel(echo_user)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        assert await system.send("main", "u", "new", parts=[IMAGE]) == "new + ['ImagePart']"
    first = model.requests[0].messages[0]
    assert (first.content, first.parts) == ("old question", [])
