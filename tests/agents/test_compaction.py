"""Context windows and compaction through the System: a long session prunes, then
summarizes; the summarizer failing; compact and clear on demand; the status figures."""

from __future__ import annotations

import asyncio
import logging
import math
from pathlib import Path

import pytest

from clawlog.actors import (
    ArgumentTypeError,
    CompactionFailedError,
    InvalidArgument,
    ModelServerError,
    Rejected,
    System,
    TurnCancelledError,
    UnknownAgent,
)
from clawlog.actors.agents import AgentConfig, CompactionConfig, CompactionInfo
from clawlog.actors.agents.context_size import (
    DEFAULT_CHARS_PER_TOKEN,
    estimate_tokens,
    prompt_chars,
)
from clawlog.actors.agents.pruning import SUMMARY_HEADER
from clawlog.actors.providers import (
    ChatMessage,
    ModelReply,
    ModelRequest,
    ScriptedModel,
    Usage,
    reply,
)
from clawlog.actors.replay import stream_state_as_of
from clawlog.events.domain.session import CompactionFailed, SessionCompacted
from tests.agents.compaction_support import (
    AGENT,
    ANSWER_CHARS,
    PAGE_CHARS,
    SESSION_KEY,
    STREAM,
    Summarizer,
    fetch_tool,
    fitted_config,
    of_type,
    page,
    record_long_session,
    researcher,
)
from tests.agents.support import GatedModel, wait_threading_event

#: A message longer than the longest summary of the default settings (1024 tokens and
#: the summary's header: about 4,300 characters), so summarizing it shortens the
#: conversation.
LONG = "m" * 5000


async def test_a_long_session_prunes_old_results_first_then_summarizes_older_turns(
    tmp_path: Path,
) -> None:
    summarizer = Summarizer()
    model = await record_long_session(tmp_path / "log.db", summarizer)
    async with System.open(tmp_path / "log.db") as system:
        events = await system.store.read_stream(STREAM)
        config = await fitted_config(system)
    compactions: list[SessionCompacted] = of_type(events, "session.compacted")
    first, summarizing = compactions[0], [c for c in compactions if c.summarized_turns]
    # Pruning came first, and was enough the first time: long results trimmed, kept whole
    # after the last three assistant messages.
    assert first.pruned and not first.summarized_turns and not first.summary
    assert {p.mode for p in first.pruned} == {"trimmed"}
    assert summarizing, "the session never summarized"
    later = summarizing[0]
    assert compactions.index(later) > 0 and later.kept_from_turn
    assert later.summary.startswith("Summary ") and later.model == "summarizer"
    assert later.tokens_after < later.tokens_before <= later.context_window
    # The summarizer read the pruned conversation, never a whole old page.
    assert summarizer.requests
    transcript = summarizer.requests[0].messages[0].content
    assert "x" * PAGE_CHARS not in transcript
    assert "pruned to save context" in transcript or "cleared to save context" in transcript
    # Every request the agent's model got was under the threshold: it compacted first.
    room = config.context_window - config.max_tokens  # type: ignore[operator]
    requested = of_type(events, "session.model_requested")
    assert all(r.estimated_tokens <= int(room * 0.8) for r in requested)
    # The request after the summary starts with it, then the kept turns word for word.
    after = next(r for r in model.requests if r.messages[0].content.startswith(SUMMARY_HEADER))
    assert after.messages[0].content == SUMMARY_HEADER + later.summary
    assert after.messages[1].role == "user" and after.messages[1].content.startswith("read page")
    # The log keeps every result whole.
    completed = of_type(events, "tool.call_completed")
    assert len(completed) == 10 and all(len(c.for_llm) > PAGE_CHARS for c in completed)


async def test_the_conversation_folded_from_the_log_is_the_compacted_one(
    tmp_path: Path,
) -> None:
    model = await record_long_session(tmp_path / "log.db", Summarizer())
    last = model.requests[-1]
    async with System.open(tmp_path / "log.db") as system:
        as_of = await stream_state_as_of(system.store, STREAM)
        status_before = await _status_after_restart(system)
    answer = ChatMessage(role="assistant", content="answer " + "y" * ANSWER_CHARS)
    assert as_of.state.messages == [*last.messages, answer]
    assert as_of.state.messages[0].content.startswith(SUMMARY_HEADER)
    assert status_before.messages == len(as_of.state.messages)
    assert status_before.compactions == as_of.state.compactions >= 2


async def _status_after_restart(system: System) -> object:
    config = await fitted_config(system)
    await system.register_agent(config, ScriptedModel(researcher), tools=[fetch_tool()])
    return await system.session_status(AGENT, SESSION_KEY)


async def test_a_failing_summarizer_is_recorded_once_per_turn_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    summarizer = Summarizer(failing=tuple(range(1, 100)))
    await record_long_session(tmp_path / "log.db", summarizer)
    async with System.open(tmp_path / "log.db") as system:
        events = await system.store.read_stream(STREAM)
        status = await _status_after_restart(system)
    failures: list[CompactionFailed] = of_type(events, "session.compaction_failed")
    assert failures and all(f.kind == "server_error" for f in failures)
    assert "summarizer unavailable" in failures[0].message and failures[0].model == "summarizer"
    assert len({f.turn_id for f in failures}) == len(failures)  # one try per turn
    assert len(summarizer.requests) == len(failures)
    assert not any(c.summarized_turns for c in of_type(events, "session.compacted"))
    assert len(of_type(events, "session.turn_completed")) == 10  # every turn still replied
    info = status.last_compaction  # type: ignore[attr-defined]
    assert info is not None and info.failure.startswith("server_error: summarizer unavailable")


async def test_compact_on_demand_summarizes_all_but_the_kept_turns(tmp_path: Path) -> None:
    model = ScriptedModel(lambda request: reply(f"ok {len(request.messages)}"))
    summarizer = Summarizer()
    async with System.open(tmp_path / "log.db") as system:
        with pytest.raises(UnknownAgent):
            await system.compact(AGENT, SESSION_KEY)
        await system.register_agent(AgentConfig(key=AGENT), model, summarizer=summarizer)
        assert await system.compact(AGENT, "fresh") is None  # nothing to compact
        fresh = await system.store.read_stream(f"session/{AGENT}/fresh")
        assert not [e for e in fresh if e.type.startswith("session.")]
        for number in range(3):
            await system.send(AGENT, SESSION_KEY, f"message {number} " + LONG)
        info = await system.compact(AGENT, SESSION_KEY)
        assert isinstance(info, CompactionInfo)
        assert (info.trigger, info.summarized_turns, info.model) == ("manual", 1, "summarizer")
        assert info.tokens_after < info.tokens_before and not info.failure
        assert await system.compact(AGENT, SESSION_KEY) is None  # only a summary is older
        await system.send(AGENT, SESSION_KEY, "message 3")
        sent = model.requests[-1].messages
        assert (
            sent[0].content
            == SUMMARY_HEADER + "Summary 1: the user asked for pages; each was long."
        )
        assert [m.content[:9] for m in sent[1:] if m.role == "user"] == [
            "message 1",
            "message 2",
            "message 3",
        ]
        status = await system.session_status(AGENT, SESSION_KEY)
        assert status.compactions == 1 and status.last_compaction == info


async def test_compact_on_demand_raises_when_the_summarizer_fails(tmp_path: Path) -> None:
    model = ScriptedModel(lambda request: reply("ok"))
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(
            AgentConfig(key=AGENT), model, summarizer=Summarizer(failing=(1,))
        )
        for number in range(3):
            await system.send(AGENT, SESSION_KEY, f"message {number} " + LONG)
        with pytest.raises(CompactionFailedError, match="summarizer unavailable") as caught:
            await system.compact(AGENT, SESSION_KEY)
        assert caught.value.kind == "server_error"
        assert "another summarizer" in str(caught.value)
        events = await system.store.read_stream(f"session/{AGENT}/{SESSION_KEY}")
        assert events[-1].type == "session.compaction_failed"
        assert await system.send(AGENT, SESSION_KEY, "still here") == "ok"
        assert len(model.requests[-1].messages) == 7  # nothing was summarized
        assert (await system.compact(AGENT, SESSION_KEY)) is not None  # call 2 works


async def test_clear_starts_a_fresh_context_and_the_log_keeps_the_history(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(lambda request: reply(f"ok {len(request.messages)}"))
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key=AGENT), model)
        assert await system.send(AGENT, SESSION_KEY, "first") == "ok 1"
        assert await system.send(AGENT, SESSION_KEY, "second") == "ok 3"
        assert await system.clear(AGENT, SESSION_KEY, by="ann") is True
        assert (await system.session_status(AGENT, SESSION_KEY)).messages == 0
        assert await system.send(AGENT, SESSION_KEY, "third") == "ok 1"
        assert [m.content for m in model.requests[-1].messages] == ["third"]
        events = await system.store.read_stream(f"session/{AGENT}/{SESSION_KEY}")
        cleared = of_type(events, "session.cleared")
        assert len(cleared) == 1 and (cleared[0].by, cleared[0].messages) == ("ann", 4)
        assert [e.text for e in of_type(events, "session.turn_started")] == [
            "first",
            "second",
            "third",
        ]
        assert await system.clear(AGENT, "empty") is False


async def test_compact_and_clear_are_refused_during_a_turn(tmp_path: Path) -> None:
    model = GatedModel([reply("done")])
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key=AGENT), model)
        turn = asyncio.ensure_future(system.send(AGENT, SESSION_KEY, "slow one"))
        await wait_threading_event(model.started)
        with pytest.raises(Rejected, match="once the turn ends"):
            await system.clear(AGENT, SESSION_KEY)
        with pytest.raises(Rejected, match="once the turn ends"):
            await system.compact(AGENT, SESSION_KEY)
        model.release.set()
        assert await turn == "done"
        assert await system.clear(AGENT, SESSION_KEY) is True


async def test_status_reports_the_window_the_threshold_and_tokens_used(tmp_path: Path) -> None:
    from clawlog.actors.agents.context_size import prompt_chars

    reported: list[int] = []

    def answer(request: ModelRequest) -> ModelReply:
        reported.append(prompt_chars(request.system, request.tools, request.messages) // 3)
        usage = Usage(input_tokens=reported[-1], output_tokens=5)
        return ModelReply(text="fine", usage=usage, stop_reason="stop")

    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="cat"), ScriptedModel(answer, name="gpt-4o"))
        await system.register_agent(AgentConfig(key="other"), ScriptedModel(answer, name="x-1"))
        await system.register_agent(
            AgentConfig(key="own", context_window=50_000, max_tokens=2000),
            ScriptedModel(answer, name="gpt-4o"),
        )
        fresh = await system.session_status("cat", "s")
        assert (fresh.context_window, fresh.compact_at_tokens) == (
            128_000,
            int((128_000 - 4096) * 0.8),
        )
        assert fresh.chars_per_token == 0.0 and fresh.tokens_used == 0 and fresh.compactions == 0
        assert (await system.session_status("other", "s")).context_window == 128_000
        own = await system.session_status("own", "s")
        assert (own.context_window, own.compact_at_tokens) == (50_000, int(48_000 * 0.8))
        await system.send("cat", "s", "hello there")
        await system.send("cat", "s", "and again")
        status = await system.session_status("cat", "s")
        events = await system.store.read_stream("session/cat/s")
        last_request = of_type(events, "session.model_requested")[-1]
        ratio = last_request.prompt_chars / reported[-1]
        assert status.chars_per_token == pytest.approx(ratio) and 3 <= ratio < 3.01
        assert status.last_input_tokens == reported[-1]
        assert status.tokens_used == sum(reported) + 2 * 5
        measured = last_request.prompt_chars + len("fine") + 16  # and the reply, measured
        assert status.context_tokens == math.ceil(measured / ratio)
        assert status.last_compaction is None


async def test_reported_usage_calibrates_when_the_session_compacts(tmp_path: Path) -> None:
    """A provider counting one token per two characters: the session learns it from the
    first reply and compacts where the rule of thumb (four) would not have."""
    from clawlog.actors.agents.context_size import prompt_chars

    def dense(request: ModelRequest) -> ModelReply:
        measured = prompt_chars(request.system, request.tools, request.messages)
        return ModelReply(text="z" * 3000, usage=Usage(input_tokens=measured // 2))

    async with System.open(tmp_path / "log.db") as system:
        fixed = await _fixed_tokens(system)
        window = fixed + 4000  # room: window - 1000; threshold 80% of it
        config = AgentConfig(
            key=AGENT,
            context_window=window,
            max_tokens=1000,
            compaction=CompactionConfig(keep_recent_turns=0),
        )
        await system.register_agent(config, ScriptedModel(dense), summarizer=Summarizer())
        for number in range(4):
            await system.send(AGENT, SESSION_KEY, f"message {number}")
        events = await system.store.read_stream(STREAM)
    requested = of_type(events, "session.model_requested")
    assert requested[0].estimated_tokens == math.ceil(
        requested[0].prompt_chars / DEFAULT_CHARS_PER_TOKEN
    )
    assert all(
        r.estimated_tokens == pytest.approx(r.prompt_chars / 2, abs=2) for r in requested[1:]
    )
    compacted = of_type(events, "session.compacted")
    assert compacted, "the calibrated estimate should have passed the threshold"
    threshold = int((window - 1000) * 0.8)
    assert compacted[0].tokens_before > threshold
    # Four characters a token would have counted half as many: under the threshold.
    assert compacted[0].tokens_before * 2 / DEFAULT_CHARS_PER_TOKEN <= threshold
    assert compacted[0].summarized_turns and compacted[0].turn_id == requested[1].turn_id


async def _fixed_tokens(system: System) -> int:
    await system.register_agent(AgentConfig(key="probe"), ScriptedModel([]))
    return (await system.session_status("probe", "s")).context_tokens


async def test_compaction_can_be_turned_off(tmp_path: Path) -> None:
    model = ScriptedModel(researcher, name="researcher")
    async with System.open(tmp_path / "log.db") as system:
        config = await fitted_config(system, compaction=CompactionConfig(enabled=False))
        await system.register_agent(config, model, tools=[fetch_tool()], summarizer=Summarizer())
        for number in range(6):
            await system.send(AGENT, SESSION_KEY, f"read page {number}")
        events = await system.store.read_stream(STREAM)
    assert of_type(events, "session.compacted") == []
    assert model.requests[-1].messages[2].content == page(1)


async def test_a_summary_without_reported_usage_is_estimated_and_counted(
    tmp_path: Path,
) -> None:
    # Neither model reports usage: the session's ratio stays the default, and the
    # summary's call is estimated like a reply's, so budgets and totals count it.
    summarizer = ScriptedModel([ModelReply(text="Summary: greetings.")], name="gpt-4o-mini")
    agent_model = ScriptedModel(lambda request: ModelReply(text="ok " * 50), name="gpt-4o")
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(
            AgentConfig(
                key=AGENT,
                compaction=CompactionConfig(keep_recent_turns=1, summary_max_tokens=20),
            ),
            agent_model,
            summarizer=summarizer,
        )
        for number in range(3):
            await system.send(AGENT, SESSION_KEY, f"hello {number}")
        info = await system.compact(AGENT, SESSION_KEY)
        events = await system.store.read_stream(STREAM)
    assert info is not None and info.summarized_turns == 2
    [compacted] = of_type(events, "session.compacted")
    [sent] = summarizer.requests
    measured = prompt_chars(sent.system, sent.tools, sent.messages)
    assert compacted.usage.estimated
    assert compacted.usage.input_tokens == estimate_tokens(measured, DEFAULT_CHARS_PER_TOKEN)
    assert compacted.usage.output_tokens == estimate_tokens(len("Summary: greetings."), 0)
    # gpt-4o-mini: $0.15 input, $0.60 output per million tokens.
    usage = compacted.usage
    expected = (usage.input_tokens * 0.15 + usage.output_tokens * 0.60) / 1e6
    assert compacted.cost_usd == pytest.approx(expected) and expected > 0


def test_bad_compaction_settings_say_what_to_change() -> None:
    with pytest.raises(InvalidArgument, match="0 < target < threshold <= 1"):
        CompactionConfig(target=0.9, threshold=0.8)
    with pytest.raises(InvalidArgument, match="trim_over_chars: is 100; it must be more than"):
        CompactionConfig(trim_over_chars=100)
    with pytest.raises(InvalidArgument, match="keep_recent_turns: must be at least 0, got -1"):
        CompactionConfig(keep_recent_turns=-1)
    with pytest.raises(ArgumentTypeError, match=r"threshold: must be a fraction.*'0\.8'"):
        CompactionConfig(threshold="0.8")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="keep_recent_turns: must be a whole number"):
        CompactionConfig(keep_recent_turns=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"context_window .* must be more than max_tokens"):
        AgentConfig(key="a", context_window=1000, max_tokens=4096)


async def test_a_summarizer_that_is_no_model_is_refused(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        with pytest.raises(ArgumentTypeError, match="summarizer") as caught:
            await system.register_agent(
                AgentConfig(key=AGENT),
                ScriptedModel([]),
                summarizer="gpt-4o-mini",  # type: ignore[arg-type]
            )
        assert caught.value.parameter == "summarizer"
        assert AGENT not in system.registered_agents()


async def test_a_failing_agent_model_summary_is_a_model_error_kind(tmp_path: Path) -> None:
    """With no summarizer given, the agent's own model writes the summary."""

    def own(request: ModelRequest) -> ModelReply | ModelServerError:
        if request.system.startswith("You condense"):
            return ModelServerError("busy")
        return reply("ok")

    model = ScriptedModel(own)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key=AGENT), model)
        for number in range(3):
            await system.send(AGENT, SESSION_KEY, f"message {number} " + LONG)
        with pytest.raises(CompactionFailedError) as caught:
            await system.compact(AGENT, SESSION_KEY)
        assert caught.value.kind == "server_error" and "'scripted'" in str(caught.value)


async def test_a_message_sent_during_compact_waits_for_the_summary(tmp_path: Path) -> None:
    model = ScriptedModel(lambda request: reply("ok"))
    summarizer = GatedModel([reply("what happened so far")])
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key=AGENT), model, summarizer=summarizer)
        for number in range(3):
            await system.send(AGENT, SESSION_KEY, f"message {number} " + LONG)
        compacting = asyncio.ensure_future(system.compact(AGENT, SESSION_KEY))
        await wait_threading_event(summarizer.started)
        waiting = asyncio.ensure_future(system.send(AGENT, SESSION_KEY, "during"))
        with pytest.raises(Rejected, match="being compacted"):
            await system.clear(AGENT, SESSION_KEY)
        summarizer.release.set()
        info = await compacting
        assert info is not None and info.summarized_turns == 1
        assert await waiting == "ok"
        events = await system.store.read_stream(STREAM)
    order = [e.type for e in events if e.type in ("session.compacted", "session.turn_started")]
    assert order[-2:] == ["session.compacted", "session.turn_started"]
    assert model.requests[-1].messages[0].content == SUMMARY_HEADER + "what happened so far"


async def test_cancelling_a_turn_while_its_summary_is_written(tmp_path: Path) -> None:
    model = ScriptedModel(lambda request: reply("ok"))
    summarizer = GatedModel([reply("earlier: message 0")])
    async with System.open(tmp_path / "log.db") as system:
        fixed = await _fixed_tokens(system)
        config = AgentConfig(
            key=AGENT,
            context_window=fixed + 3000,
            max_tokens=1000,
            compaction=CompactionConfig(keep_recent_turns=0, summary_max_tokens=500),
        )
        await system.register_agent(config, model, summarizer=summarizer)
        await system.send(AGENT, SESSION_KEY, "message 0 " + "m" * 4000)
        turn = asyncio.ensure_future(system.send(AGENT, SESSION_KEY, "message 1 " + "m" * 4000))
        await wait_threading_event(summarizer.started)
        assert await system.cancel(AGENT, SESSION_KEY) is True
        with pytest.raises(TurnCancelledError):
            await turn
        await wait_threading_event(summarizer.cancelled)
        summarizer.release.set()
        assert await system.send(AGENT, SESSION_KEY, "message 2") == "ok"
        events = await system.store.read_stream(STREAM)
    turns = [e.event.turn_id for e in events if e.type == "session.turn_started"]
    in_cancelled = [e.type for e in events if e.correlation_id == turns[1]]
    assert "session.model_requested" not in in_cancelled
    assert "session.compacted" not in in_cancelled and "session.turn_cancelled" in in_cancelled
    compacted = [e.event for e in events if e.type == "session.compacted"]
    assert len(compacted) == 1 and compacted[0].turn_id == turns[2]
    assert compacted[0].summarized_turns == turns[:2]
    assert [m.content[:9] for m in model.requests[-1].messages] == [
        SUMMARY_HEADER[:9],
        "message 2",
    ]


async def test_compact_on_demand_leaves_a_conversation_a_summary_could_only_lengthen(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(lambda request: reply("ok"))
    summarizer = Summarizer()
    terse = CompactionConfig(summary_max_tokens=100)  # at most about 560 characters
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key=AGENT), model, summarizer=summarizer)
        await system.register_agent(
            AgentConfig(key="terse", compaction=terse), model, summarizer=summarizer
        )
        for agent in (AGENT, "terse"):
            for number in range(3):
                await system.send(agent, SESSION_KEY, f"message {number} " + "m" * 1000)
        recorded = len(await system.store.read_stream(STREAM))
        # The turn a summary would replace is shorter than a summary of up to 1024
        # tokens: nothing is compacted, nothing recorded, no summarizer called.
        assert await system.compact(AGENT, SESSION_KEY) is None
        assert len(await system.store.read_stream(STREAM)) == recorded
        assert summarizer.requests == []
        assert (await system.session_status(AGENT, SESSION_KEY)).compactions == 0
        # Longer than a summary of up to 100 tokens: summarized.
        info = await system.compact("terse", SESSION_KEY)
        assert info is not None and info.summarized_turns == 1
        assert info.tokens_after < info.tokens_before and len(summarizer.requests) == 1


async def test_compactions_are_logged_with_the_session_and_the_turn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="clawlog")
    await record_long_session(tmp_path / "log.db", Summarizer(failing=(1,)))
    async with System.open(tmp_path / "log.db") as system:
        events = await system.store.read_stream(STREAM)
    logged = [vars(r) for r in caplog.records if r.name.startswith("clawlog.actors.agents")]
    planned = [r for r in logged if r["event"] == "compaction planned"]
    compacted: list[SessionCompacted] = of_type(events, "session.compacted")
    failed: list[CompactionFailed] = of_type(events, "session.compaction_failed")
    assert len(planned) == len(compacted) + len(failed) - sum(1 for f in failed if f.pruned)
    for record in planned:
        assert record["actor"] == record["stream"] == STREAM
        assert record["correlation_id"] == record["turn_id"] != ""
        assert record["tokens_before"] > record["context_window"] * 0.5
    [refusal] = [r for r in logged if r["event"].startswith("summary failed")]
    assert refusal["levelname"] == "WARNING" and refusal["kind"] == "server_error"
    assert (refusal["actor"], refusal["turn_id"]) == (STREAM, failed[0].turn_id)
    summarized = [r for r in logged if r["event"] == "conversation summarized"]
    written = [c for c in compacted if c.summarized_turns]
    assert [(r["tokens_before"], r["tokens_after"]) for r in summarized] == [
        (c.tokens_before, c.tokens_after) for c in written
    ]
