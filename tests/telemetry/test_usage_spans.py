"""The ``chat`` spans' usage (issue 19's fields), the summarizer's span and streamed requests.

A reply's ``chat {model}`` span carries what ``session.model_replied`` records: the model
the provider named, the cached and cache-written parts of the prompt (the GenAI semconv's
names), the reasoning tokens, whether the counts were estimated and the estimated cost.
A compaction's summarizer call is a ``chat {summarizer}`` span under the turn (under the
caller's span for ``System.compact``), built from its ``session.compacted`` (or
``session.compaction_failed``). A streamed request's span has the time to its first text
delta; a cut stream's is an ERROR span of kind ``stream_cut``. Every session is recorded
live on a real SQLite file under the test's SDK, then exported, and the two trees compared.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from clawlog.actors import System, TurnFailedError
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ScriptedModel, Usage, reply, stream_cut
from clawlog.events.domain.session import CompactionFailed, ModelReplied, SessionCompacted
from clawlog.events.telemetry import (
    COMPACTION_TRIGGER,
    CORRELATION,
    COST_USD,
    ERROR_TYPE,
    GEN_AI_CACHE_CREATION_TOKENS,
    GEN_AI_CACHE_READ_TOKENS,
    GEN_AI_INPUT_TOKENS,
    GEN_AI_OUTPUT_TOKENS,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_TIME_TO_FIRST_CHUNK,
    POSITION,
    REASONING_TOKENS,
    USAGE_ESTIMATED,
)
from tests.agents.compaction_support import (
    AGENT,
    SESSION_KEY,
    STREAM,
    Summarizer,
    of_type,
    record_long_session,
)

from .conftest import Telemetry
from .test_export import attributes, children, exported, forest, read_log

LONG = "m" * 5000


def priced(request: object) -> ModelReply:
    """A reply naming its snapshot, with every usage count a provider can report."""
    return ModelReply(
        text="cached answer",
        stop_reason="stop",
        model="gpt-4o-2024-08-06",
        usage=Usage(
            input_tokens=1200,
            output_tokens=80,
            cached_input_tokens=1000,
            cache_write_tokens=150,
            reasoning_tokens=30,
        ),
    )


def without_first_chunk(lines: list[str]) -> list[str]:
    """Forest lines without the time to first chunk: a live measure the log does not keep."""
    found = re.compile(rf", \('{re.escape(GEN_AI_TIME_TO_FIRST_CHUNK)}', [^)]*\)")
    return sorted(found.sub("", line) for line in lines)


def of_agent(lines: list[str], agent: str) -> list[str]:
    """The forest lines of the trees rooted in ``agent``'s turns."""
    root = f"/invoke_agent {agent}"
    return sorted(line for line in lines if line.startswith((f"{root} ", f"{root}/")))


def under(spans: tuple[ReadableSpan, ...] | list[ReadableSpan], turn: ReadableSpan) -> list[str]:
    return sorted(s.name for s in children(spans, turn))


async def test_a_chat_span_carries_the_replys_model_cache_reasoning_and_cost(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    path = tmp_path / "log.db"
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="a"), ScriptedModel(priced, name="gpt-4o"))
        await system.register_agent(
            AgentConfig(key="b"),
            ScriptedModel([ModelReply(text="no usage reported")], name="in-house"),
        )
        assert await system.send("a", "u", "hello") == "cached answer"
        assert await system.send("b", "u", "hello") == "no usage reported"
    recorded = [e.event for e in await read_log(path) if isinstance(e.event, ModelReplied)]
    priced_reply, estimated_reply = recorded
    assert priced_reply.cost_usd is not None and priced_reply.cost_usd > 0

    chat = attributes(telemetry.span("chat gpt-4o"))
    assert chat[GEN_AI_REQUEST_MODEL] == "gpt-4o"
    assert chat[GEN_AI_RESPONSE_MODEL] == "gpt-4o-2024-08-06"
    assert (chat[GEN_AI_INPUT_TOKENS], chat[GEN_AI_OUTPUT_TOKENS]) == (1200, 80)
    assert chat[GEN_AI_CACHE_READ_TOKENS] == 1000
    assert chat[GEN_AI_CACHE_CREATION_TOKENS] == 150
    assert chat[REASONING_TOKENS] == 30
    assert chat[COST_USD] == pytest.approx(priced_reply.cost_usd)
    assert USAGE_ESTIMATED not in chat  # the provider reported its usage

    guessed = attributes(telemetry.span("chat in-house"))
    assert guessed[USAGE_ESTIMATED] is True
    assert guessed[GEN_AI_INPUT_TOKENS] == estimated_reply.usage.input_tokens > 0
    assert guessed[GEN_AI_CACHE_READ_TOKENS] == 0
    assert COST_USD not in guessed  # the catalog has no price for it
    # The reply named no model: the log records the one asked (ModelReplied.model).
    assert guessed[GEN_AI_RESPONSE_MODEL] == estimated_reply.model == "in-house"

    live = forest(telemetry.spans())
    for agent in ("a", "b"):
        assert forest(await exported(path, agent, "u")) == of_agent(live, agent)


async def test_the_token_usage_metric_keeps_the_two_semconv_types(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    """The semconv's ``gen_ai.token.type`` has no cached type: the whole prompt (cached part
    included) counts as input, once."""
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="a"), ScriptedModel(priced, name="gpt-4o"))
        await system.send("a", "u", "hello")
    points = telemetry.points("gen_ai.client.token.usage")
    assert sorted(p.attributes["gen_ai.token.type"] for p in points) == ["input", "output"]
    # The attributes the GenAI conventions require on it, and the model asked.
    for point in points:
        assert point.attributes["gen_ai.operation.name"] == "chat"
        assert point.attributes["gen_ai.provider.name"] == "scripted"
        assert point.attributes["gen_ai.request.model"] == "gpt-4o"
    assert telemetry.value("gen_ai.client.token.usage", **{"gen_ai.token.type": "input"}) == 1
    totals = {p.attributes["gen_ai.token.type"]: p.total for p in points}
    assert totals == {"input": 1200, "output": 80}


async def test_a_summary_in_a_turn_is_a_chat_span_under_it_live_and_exported(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    path = tmp_path / "log.db"
    await record_long_session(path, Summarizer())
    log = await read_log(path)
    written: list[SessionCompacted] = [
        c for c in of_type(log, "session.compacted") if c.summarized_turns
    ]
    assert written, "the long session wrote no summary"

    summaries = telemetry.spans_named("chat summarizer")
    assert len(summaries) == len(written)
    first, compacted = summaries[0], written[0]
    turn = next(
        s
        for s in telemetry.spans_named(f"invoke_agent {AGENT}")
        if attributes(s)[CORRELATION] == compacted.turn_id
    )
    assert first.parent is not None and first.parent.span_id == turn.context.span_id
    assert first.kind == SpanKind.CLIENT and first.status.status_code == StatusCode.UNSET
    found = attributes(first)
    assert found[GEN_AI_REQUEST_MODEL] == "summarizer"
    assert found[COMPACTION_TRIGGER] == "threshold"
    assert found[GEN_AI_INPUT_TOKENS] == compacted.usage.input_tokens
    assert found[GEN_AI_OUTPUT_TOKENS] == compacted.usage.output_tokens > 0
    assert found[GEN_AI_RESPONSE_MODEL] == "summarizer"
    assert USAGE_ESTIMATED not in found and COST_USD not in found
    position = next(
        e.position for e in log if isinstance(e.event, SessionCompacted) and e.event == compacted
    )
    assert found[POSITION] == position
    # It ends before the request it made room for starts.
    request = next(
        s
        for s in children(telemetry.spans(), turn)
        if s.name == "chat researcher" and attributes(s)["clawlog.iteration"] == compacted.iteration
    )
    assert first.end_time is not None and request.start_time is not None
    assert first.end_time <= request.start_time

    assert forest(await exported(path, AGENT, SESSION_KEY)) == forest(telemetry.spans())


async def test_a_failed_summary_is_an_error_span_live_and_exported(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    path = tmp_path / "log.db"
    await record_long_session(path, Summarizer(failing=(1,)))
    failures: list[CompactionFailed] = of_type(await read_log(path), "session.compaction_failed")
    assert len(failures) == 1
    failed = next(
        s for s in telemetry.spans_named("chat summarizer") if s.status.status_code.name == "ERROR"
    )
    assert attributes(failed)[ERROR_TYPE] == "server_error"
    assert failed.status.description == f"server_error: {failures[0].message}"
    assert [e.name for e in failed.events] == ["exception"]
    assert forest(await exported(path, AGENT, SESSION_KEY)) == forest(telemetry.spans())


async def test_compact_on_demand_puts_the_summary_span_under_the_callers(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    model = ScriptedModel(lambda request: reply("ok"))
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key=AGENT), model, summarizer=Summarizer())
        for number in range(3):
            await system.send(AGENT, SESSION_KEY, f"message {number} " + LONG)
        with trace.get_tracer("app").start_as_current_span("ops compacts") as caller:
            info = await system.compact(AGENT, SESSION_KEY)
        assert info is not None and info.summarized_turns == 1
        # Untraced, it has no span of its own (nothing traced asked for it).
        for number in range(3, 6):
            await system.send(AGENT, SESSION_KEY, f"message {number} " + LONG)
        assert await system.compact(AGENT, SESSION_KEY) is not None
        events = await system.store.read_stream(STREAM)
    summary = telemetry.span("chat summarizer")
    assert summary.parent is not None
    assert summary.parent.span_id == caller.get_span_context().span_id
    assert summary.context.trace_id == caller.get_span_context().trace_id
    found = attributes(summary)
    assert found[COMPACTION_TRIGGER] == "manual"
    assert CORRELATION not in found  # no turn
    first = next(e for e in events if isinstance(e.event, SessionCompacted))
    assert found[POSITION] == first.position


async def test_a_streamed_request_records_its_time_to_first_chunk(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    path = tmp_path / "log.db"
    async with System.open(path) as system:
        text = "a streamed answer in several pieces"
        await system.register_agent(AgentConfig(key="a"), ScriptedModel([reply(text)]))
        async with system.stream("a", "u", "hi") as turn:
            assert "".join([d.text async for d in turn]) == text
        await system.register_agent(AgentConfig(key="b"), ScriptedModel([reply(text)]))
        assert await system.send("b", "u", "hi") == text  # not streamed
    streamed = telemetry.spans_named("chat scripted")
    first_chunk = [attributes(s).get(GEN_AI_TIME_TO_FIRST_CHUNK) for s in streamed]
    assert sum(value is not None for value in first_chunk) == 1
    span = next(s for s in streamed if GEN_AI_TIME_TO_FIRST_CHUNK in attributes(s))
    seconds = attributes(span)[GEN_AI_TIME_TO_FIRST_CHUNK]
    assert span.start_time is not None and span.end_time is not None
    assert 0 < seconds <= (span.end_time - span.start_time) / 1e9
    # The export has everything else (the log keeps no time to the first chunk).
    live = of_agent(without_first_chunk(forest(telemetry.spans())), "a")
    assert without_first_chunk(forest(await exported(path, "a", "u"))) == live


async def test_a_cut_stream_is_an_error_span_of_kind_stream_cut(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    path = tmp_path / "log.db"
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="a"), ScriptedModel([stream_cut("half a sen")]))
        with pytest.raises(TurnFailedError, match="stream_cut"):
            async with system.stream("a", "u", "hi") as turn:
                async for _ in turn:
                    pass
    span = telemetry.span("chat scripted")
    found: dict[str, Any] = attributes(span)
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description is not None and span.status.description.startswith("stream_cut")
    assert found[ERROR_TYPE] == "stream_cut"
    assert found[GEN_AI_TIME_TO_FIRST_CHUNK] > 0  # its first words did arrive
    assert without_first_chunk(forest(await exported(path, "a", "u"))) == without_first_chunk(
        forest(telemetry.spans())
    )
    exported_chat = attributes(
        next(s for s in await exported(path, "a", "u") if s.name == "chat scripted")
    )
    assert exported_chat[ERROR_TYPE] == "stream_cut"
