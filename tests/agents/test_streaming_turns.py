"""Streamed turns (``System.stream``): text as it arrives, the same log as ``send``, cut
streams, early close, slow readers, and the same argument checks as ``send``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from clawlog.actors import (
    AskTimeout,
    InvalidArgument,
    System,
    TurnCancelledError,
    TurnFailedError,
    UnknownAgent,
)
from clawlog.actors.agents import AgentConfig, TurnDelta
from clawlog.actors.agents.delta_sink import STREAM_BUFFER, DeltaSink
from clawlog.actors.errors import ArgumentTypeError
from clawlog.actors.providers import (
    ModelReply,
    ModelRequest,
    OpenAIChatModel,
    ScriptedModel,
    TextDelta,
    Usage,
    call,
    reply,
    stream_cut,
)
from clawlog.events.domain.session import ModelFailed, TurnStarted
from tests.agents.support import Gate, types
from tests.providers.test_providers import FAST, KEY
from tests.providers.test_streaming import openai_chunk
from tests.providers.wire_server import Canned, WireServer

#: Payload fields that differ between two runs of the same turn: its id, what is derived
#: from it (a tool call's idempotency key), clocks.
RUN_SPECIFIC = {"turn_id", "idempotency_key", "duration_ms", "started_at", "ended_at", "task_id"}


def planner(request: ModelRequest) -> ModelReply:
    """Says something, lists the sessions, then answers (the same for every run)."""
    if any(m.role == "tool" for m in request.messages):
        return ModelReply(
            text="There is one session: this one.",
            stop_reason="stop",
            usage=Usage(input_tokens=40, output_tokens=7),
        )
    return call("sessions_list", text="Let me look at the sessions.", call_id="c1")


class GatedStreamingModel:
    """Streams its first words, then waits for the test before the rest (a slow provider)."""

    def __init__(self, first: str, rest: str) -> None:
        self.first, self.rest = first, rest
        self.release = Gate()
        self.cancelled = threading.Event()

    @property
    def name(self) -> str:
        return "gated-stream"

    @property
    def provider(self) -> str:
        return "scripted"

    async def complete(self, request: ModelRequest) -> ModelReply:
        await self.release.wait()
        return reply(self.first + self.rest)

    async def stream(self, request: ModelRequest) -> AsyncGenerator[TextDelta | ModelReply, None]:
        yield TextDelta(self.first)
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        yield TextDelta(self.rest)
        yield reply(self.first + self.rest)


class CompleteOnlyModel:
    """A model that cannot stream: only ``complete``."""

    @property
    def name(self) -> str:
        return "complete-only"

    @property
    def provider(self) -> str:
        return "scripted"

    async def complete(self, request: ModelRequest) -> ModelReply:
        return reply("the whole answer at once")


class FloodModel:
    """Streams ``count`` one-word deltas as fast as it can, then the reply."""

    def __init__(self, count: int) -> None:
        self.count = count

    @property
    def name(self) -> str:
        return "flood"

    @property
    def provider(self) -> str:
        return "scripted"

    def words(self) -> list[str]:
        return [f"w{i} " for i in range(self.count)]

    async def complete(self, request: ModelRequest) -> ModelReply:
        return reply("".join(self.words()))

    async def stream(self, request: ModelRequest) -> AsyncGenerator[TextDelta | ModelReply, None]:
        for word in self.words():
            yield TextDelta(word)
        yield reply("".join(self.words()))


async def read_all(turn: Any) -> list[TurnDelta]:
    return [delta async for delta in turn]


def normalized(events: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for recorded in events:
        payload = msgspec.to_builtins(recorded.event)
        out.append((recorded.type, {k: v for k, v in payload.items() if k not in RUN_SPECIFIC}))
    return out


async def outbox_reply(system: System, turn_id: str) -> str:
    """The reply the turn ``turn_id`` put in the outbox (waits for it)."""
    async for message in system.outbox(kinds=["reply"]):
        if message.turn_id == turn_id:
            return message.text
    raise AssertionError("the outbox ended")


# --- the text arrives in pieces; the log is the same as send's ---


async def test_a_streamed_turn_yields_its_text_in_pieces_then_the_reply(tmp_path: Path) -> None:
    text = "one two three four five six seven eight"
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel([reply(text)]))
        async with system.stream("main", "u", "hello") as turn:
            deltas = await read_all(turn)
        events = await system.store.read_stream("session/main/u")
    assert len(deltas) > 1
    assert "".join(d.text for d in deltas) == text
    assert {d.iteration for d in deltas} == {1}
    assert turn.reply == text
    [started] = [e.event for e in events if isinstance(e.event, TurnStarted)]
    assert started.turn_id == turn.turn_id


async def test_the_log_is_the_same_whether_or_not_the_turn_streamed(tmp_path: Path) -> None:
    async with System.open(tmp_path / "plain.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(planner))
        sent = await system.send("main", "u", "how many sessions?")
        plain = await system.store.read_stream("session/main/u")
    async with System.open(tmp_path / "streamed.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(planner))
        async with system.stream("main", "u", "how many sessions?") as turn:
            deltas = await read_all(turn)
        streamed = await system.store.read_stream("session/main/u")
    assert turn.reply == sent == "There is one session: this one."
    assert types(streamed) == types(plain)
    assert "tool.call_completed" in types(streamed)
    assert normalized(streamed) == normalized(plain)
    # Each model step's text, tagged with its iteration (the tool call's step said something).
    by_iteration: dict[int, str] = {}
    for delta in deltas:
        by_iteration[delta.iteration] = by_iteration.get(delta.iteration, "") + delta.text
    assert by_iteration == {1: "Let me look at the sessions.", 2: "There is one session: this one."}


async def test_a_model_that_cannot_stream_gives_its_text_as_one_delta(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), CompleteOnlyModel())
        async with system.stream("main", "u", "hello") as turn:
            deltas = await read_all(turn)
    assert deltas == [TurnDelta("the whole answer at once", 1)]
    assert turn.reply == "the whole answer at once"


async def test_iterating_without_async_with_starts_the_turn_too(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel([reply("a b c")]))
        turn = system.stream("main", "u", "hello")
        assert turn.reply is None
        assert "".join(d.text for d in await read_all(turn)) == "a b c"
        assert turn.reply == "a b c"
        assert await read_all(turn) == []  # ended: iterating again yields nothing


async def test_a_streamed_turn_keeps_its_channel_and_goes_to_the_outbox(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel([reply("hi there")]))
        turn = system.stream("main", "u", "hello", channel="web", chat_id="c1", user="ana")
        await read_all(turn)
        async for posted in system.outbox(kinds=["reply"], follow=False):
            assert (posted.turn_id, posted.text) == (turn.turn_id, "hi there")
            assert (posted.channel, posted.chat_id, posted.user) == ("web", "c1", "ana")
            break
        else:
            raise AssertionError("the streamed turn's reply is not in the outbox")


# --- a stream cut in the middle ---


async def test_a_scripted_stream_cut_records_a_model_failure_and_no_reply(tmp_path: Path) -> None:
    model = ScriptedModel([stream_cut("half of a sen")])
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        deltas: list[TurnDelta] = []
        with pytest.raises(TurnFailedError) as failed:
            async with system.stream("main", "u", "hello") as turn:
                async for delta in turn:
                    deltas.append(delta)
        events = await system.store.read_stream("session/main/u")
    assert "".join(d.text for d in deltas) == "half of a sen"  # shown before the cut
    assert failed.value.reason == "model_error" and "stream_cut" in str(failed.value)
    assert turn.reply is None
    assert "session.model_replied" not in types(events)
    [model_failed] = [e.event for e in events if isinstance(e.event, ModelFailed)]
    assert model_failed.kind == "stream_cut"
    assert types(events)[-1] == "session.turn_failed"


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as running:
        yield running


async def test_an_http_stream_dropped_mid_reply_fails_the_turn(
    tmp_path: Path, server: WireServer
) -> None:
    events = [
        openai_chunk({"role": "assistant", "content": "The answer "}),
        openai_chunk({"content": "is"}),
    ]
    server.responses.append(
        Canned(events=[*events, openai_chunk({"content": " 42"})], drop_after=2)
    )
    model = OpenAIChatModel(model="m-1", api_key=KEY, base_url=server.url, retry=FAST)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        deltas: list[TurnDelta] = []
        with pytest.raises(TurnFailedError, match="stream_cut"):
            async for delta in system.stream("main", "u", "hello"):
                deltas.append(delta)
        recorded = await system.store.read_stream("session/main/u")
        # The session is not wedged: the next turn runs.
        server.responses.append(
            Canned(events=[openai_chunk({"content": "fine"}, finish="stop"), "data: [DONE]\n\n"])
        )
        again = system.stream("main", "u", "again?")
        assert [d.text for d in await read_all(again)] == ["fine"] and again.reply == "fine"
        await model.aclose()
    assert "".join(d.text for d in deltas) == "The answer is"
    assert "session.model_replied" not in types(recorded)
    failure = next(e.event for e in recorded if isinstance(e.event, ModelFailed))
    assert failure.kind == "stream_cut"
    assert server.requests[0]["body"]["stream"] is True


# --- the reader stops, is slow, is cancelled; the turn is cancelled ---


async def test_closing_the_stream_early_lets_the_turn_finish_into_the_outbox(
    tmp_path: Path,
) -> None:
    model = GatedStreamingModel("first words, ", "then the rest")
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        async with system.stream("main", "u", "hello") as turn:
            first = await anext(turn)
        # Closed after one delta: the turn goes on without its reader.
        model.release.set()
        assert await outbox_reply(system, turn.turn_id) == "first words, then the rest"
        assert turn.reply is None and await read_all(turn) == []
        # Not wedged: the next turn of the session runs at once.
        assert await system.send("main", "u", "and now?") == "first words, then the rest"
    assert first == TurnDelta("first words, ", 1)
    assert not model.cancelled.is_set()


async def test_a_slow_reader_gets_fewer_larger_deltas_and_no_text_is_lost(
    tmp_path: Path,
) -> None:
    model = FloodModel(STREAM_BUFFER * 4)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        async with system.stream("main", "u", "hello") as turn:
            # The reader reads nothing until the whole turn is recorded: the hub never
            # waited for it.
            assert await outbox_reply(system, turn.turn_id) == "".join(model.words())
            deltas = await read_all(turn)
    assert "".join(d.text for d in deltas) == "".join(model.words())
    assert len(deltas) <= STREAM_BUFFER
    assert turn.coalesced == STREAM_BUFFER * 4 - len(deltas)


async def test_a_reader_cancelled_while_waiting_loses_nothing(tmp_path: Path) -> None:
    model = GatedStreamingModel("one ", "two")
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        async with system.stream("main", "u", "hello") as turn:
            assert await anext(turn) == TurnDelta("one ", 1)
            waiting = asyncio.ensure_future(anext(turn))
            await asyncio.sleep(0)  # one loop step: it is now waiting for the next delta
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            model.release.set()
            assert await read_all(turn) == [TurnDelta("two", 1)]
    assert turn.reply == "one two"


async def test_cancelling_the_turn_ends_the_stream_with_turn_cancelled(tmp_path: Path) -> None:
    model = GatedStreamingModel("thinking... ", "never sent")
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        async with system.stream("main", "u", "hello") as turn:
            assert await anext(turn) == TurnDelta("thinking... ", 1)
            assert await system.cancel("main", "u")
            with pytest.raises(TurnCancelledError):
                await anext(turn)
            # The provider's stream itself was stopped (an HTTP one closes its connection).
            assert await asyncio.to_thread(model.cancelled.wait, 10)
        events = await system.store.read_stream("session/main/u")
    assert types(events)[-1] == "session.turn_cancelled"
    assert "session.model_replied" not in types(events)


async def test_a_turn_that_outlives_the_timeout_raises_ask_timeout_and_goes_on(
    tmp_path: Path,
) -> None:
    model = GatedStreamingModel("slow ", "answer")
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        turn = system.stream("main", "u", "hello", timeout=0.2)
        with pytest.raises(AskTimeout, match="the turn goes on"):
            await read_all(turn)  # the model waits for the gate: the timeout passes
        model.release.set()
        assert await outbox_reply(system, turn.turn_id) == "slow answer"


# --- arguments ---


async def test_stream_checks_its_arguments_like_send(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel([reply("x")]))
        with pytest.raises(InvalidArgument, match="text"):
            system.stream("main", "u", "")
        with pytest.raises(InvalidArgument):
            system.stream("main", "", "hello")
        with pytest.raises(InvalidArgument, match="timeout"):
            system.stream("main", "u", "hello", timeout=0)
        with pytest.raises(ArgumentTypeError):
            system.stream("main", "u", 42)  # type: ignore[arg-type]
        with pytest.raises(UnknownAgent, match="nobody"):
            async with system.stream("nobody", "u", "hello"):
                pass
        assert system.runtime.lookup("session/main/u") is None  # nothing was started


# --- the sink alone ---


async def test_the_sink_gives_every_delta_before_the_end_and_coalesces_per_iteration() -> None:
    sink = DeltaSink(asyncio.get_running_loop(), capacity=2)
    for text in ("a", "b", "c", "d"):
        sink.push(1, text)
    sink.push(2, "e")  # another iteration is never joined to the one before
    sink.push(2, "")  # nothing to say: nothing queued
    sink.set("abcde")
    sink.push(3, "late")  # after the end: ignored
    received = [await sink.next() for _ in range(3)]
    assert received == [TurnDelta("a", 1), TurnDelta("bcd", 1), TurnDelta("e", 2)]
    assert await sink.next() is None and sink.reply == "abcde"
    assert sink.coalesced == 2


async def test_a_detached_sink_drops_what_waits_and_ignores_later_pushes() -> None:
    sink = DeltaSink(asyncio.get_running_loop())
    sink.push(1, "unread")
    sink.detach()
    sink.push(1, "later")
    sink.set_error(TurnFailedError("model_error", "nobody reads this"))
    with pytest.raises(TurnFailedError):
        await sink.next()
    with pytest.raises(ValueError, match="capacity"):
        DeltaSink(asyncio.get_running_loop(), capacity=0)
