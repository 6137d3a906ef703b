"""ScriptedModel streams too, so sessions can be tested with streaming and no HTTP."""

from __future__ import annotations

import pytest

from clawlog.actors.errors import ModelBadRequest, ModelServerError, ModelStreamCut
from clawlog.actors.providers import (
    ModelReply,
    ModelRequest,
    ScriptedModel,
    StreamingModel,
    TextDelta,
    call,
    reply,
    stream_cut,
)
from clawlog.actors.providers.scripted import pieces

REQUEST = ModelRequest(model="scripted", system="", messages=[])


async def items_of(model: ScriptedModel) -> list[TextDelta | ModelReply]:
    return [item async for item in model.stream(REQUEST)]


@pytest.mark.parametrize(
    "text", ["", "one", "two words", "a reply of several words,\n with  spaces ", "   "]
)
def test_pieces_join_back_to_the_text_and_are_few(text: str) -> None:
    cut = pieces(text)
    assert "".join(cut) == text and len(cut) <= 3 and all(cut)


async def test_a_scripted_reply_streams_in_a_few_deltas_then_the_reply() -> None:
    answer = reply("The notes say hi, and more besides.")
    model = ScriptedModel([answer, call("read_file", path="a.md")])
    assert isinstance(model, StreamingModel)
    items = await items_of(model)
    deltas = [item.text for item in items[:-1] if isinstance(item, TextDelta)]
    assert 1 < len(deltas) <= 3 and "".join(deltas) == answer.text
    assert items[-1] is answer
    # A tool call without text: no delta, just the reply; one script step per stream.
    [only] = await items_of(model)
    assert isinstance(only, ModelReply) and only.tool_calls[0].name == "read_file"
    assert model.remaining == 0 and len(model.requests) == 2


async def test_a_scripted_stream_cut_delivers_its_partial_text_then_raises() -> None:
    model = ScriptedModel([stream_cut("Half of an ans"), stream_cut("Half again")])
    seen: list[TextDelta | ModelReply] = []
    with pytest.raises(ModelStreamCut) as info:
        async for item in model.stream(REQUEST):
            seen.append(item)
    assert "".join(item.text for item in seen if isinstance(item, TextDelta)) == "Half of an ans"
    assert info.value.partial_text == "Half of an ans" and not info.value.retryable
    with pytest.raises(ModelStreamCut):
        await model.complete(REQUEST)


async def test_a_scripted_error_is_raised_before_any_delta() -> None:
    model = ScriptedModel([ModelServerError("down")])
    with pytest.raises(ModelServerError):
        await items_of(model)


async def test_the_scripted_model_checks_tool_choice_like_the_providers() -> None:
    model = ScriptedModel([reply("never")])
    request = ModelRequest(model="scripted", system="", messages=[], tool_choice="exec")
    with pytest.raises(ModelBadRequest, match="tool_choice='exec'"):
        await model.complete(request)
    with pytest.raises(ModelBadRequest):
        await anext(model.stream(request))
    assert model.remaining == 1
