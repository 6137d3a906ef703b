"""The events of one step of a turn share one commit (issue 24, "Fewer commits per turn").

What must be durable before the request goes out (the turn's start, a compaction decided
on the way) is one append, so a turn pays one commit before its first token. Counted
through the backend seam: :class:`AppendCountingBackend` is the real SQLite backend that
notes each append it is given (one session's appends each wait for their own commit).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest

from clawlog.actors import ActorDead, System, TurnFailedError
from clawlog.actors.agents import AgentConfig
from clawlog.actors.agents.budgets import BudgetLimits, Budgets
from clawlog.actors.providers import (
    ModelReply,
    ModelRequest,
    ScriptedModel,
    Usage,
    call,
    reply,
)
from clawlog.events import EventMetadata, NewRecord, StoredRecord
from clawlog.events.backends.sqlite import SqliteBackend
from clawlog.tools import FunctionTool
from clawlog.tools.side_effects import SideEffects
from tests.agents.compaction_support import (
    AGENT,
    SESSION_KEY,
    STREAM,
    Summarizer,
    fetch_tool,
    fitted_config,
    researcher,
)
from tests.agents.support import GatedModel, types, wait_threading_event


class AppendCountingBackend(SqliteBackend):
    """The SQLite backend, keeping the event types of each append per stream."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.appends: dict[str, list[list[str]]] = {}

    def append(
        self,
        stream: str,
        records: Sequence[NewRecord],
        expected_version: int,
        metadata: EventMetadata,
    ) -> asyncio.Future[list[StoredRecord]]:
        self.appends.setdefault(stream, []).append([r.type for r in records])
        return super().append(stream, records, expected_version, metadata)

    def session_appends(self, stream: str) -> list[list[str]]:
        """The appends of ``stream`` of its turns (not those of its lifecycle)."""
        appends = self.appends.get(stream, [])
        return [a for a in appends if not all(t.startswith("actor.") for t in a)]


async def test_a_turn_pays_one_commit_before_its_first_model_request(tmp_path: Path) -> None:
    backend = AppendCountingBackend(tmp_path / "log.db")
    seen: list[list[list[str]]] = []  # the session's appends when each request went out

    def model(request: ModelRequest) -> ModelReply:
        seen.append([list(a) for a in backend.session_appends("session/main/s")])
        return reply(f"echo: {request.messages[-1].content}")

    async with System.open(backend) as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(model))
        assert await system.send("main", "s", "one") == "echo: one"
        assert await system.send("main", "s", "two") == "echo: two"
        appends = backend.session_appends("session/main/s")
    opening = ["session.started", "session.turn_started", "session.model_requested"]
    assert seen[0] == [opening]  # one commit before the first request of a new session
    # The next turn: its start and request are the one commit after the first turn's two.
    assert seen[1][2:] == [["session.turn_started", "session.model_requested"]]
    # Then the reply with the turn's end and its outbox message: two commits a turn.
    ended = ["session.model_replied", "session.turn_completed", "outbox.message_posted"]
    assert appends == [
        opening,
        ended,
        ["session.turn_started", "session.model_requested"],
        ended,
    ]


async def test_the_shared_append_keeps_the_turns_cause_and_its_request_follows_it(
    tmp_path: Path,
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel([reply("hi")]))
        assert await system.send("main", "s", "hello") == "hi"
        events = await system.store.read_stream("session/main/s")
    started, requested = (
        next(e for e in events if e.type == t)
        for t in ("session.turn_started", "session.model_requested")
    )
    turn_id = started.event.turn_id  # type: ignore[union-attr]
    assert requested.version == started.version + 1
    assert requested.recorded_at == started.recorded_at  # one transaction
    assert (started.correlation_id, requested.correlation_id) == (turn_id, turn_id)


async def test_a_budget_refusal_at_the_first_request_is_one_append(tmp_path: Path) -> None:
    limit = 1_000_000
    backend = AppendCountingBackend(tmp_path / "log.db")
    spent = ModelReply(text="first", usage=Usage(input_tokens=limit - 10))
    config = AgentConfig(
        key="main", max_tokens=100, budgets=Budgets(session=BudgetLimits(max_tokens=limit))
    )
    async with System.open(backend) as system:
        await system.register_agent(config, ScriptedModel([spent]))
        assert await system.send("main", "s", "one") == "first"
        with pytest.raises(TurnFailedError) as failed:
            await system.send("main", "s", "two")
        events = await system.store.read_stream("session/main/s")
    assert failed.value.reason == "budget_exceeded"
    assert backend.session_appends("session/main/s")[-1] == [
        "session.turn_started",
        "session.budget_exceeded",
        "session.turn_failed",
        "outbox.message_posted",
    ]
    turn_id = next(e for e in reversed(events) if e.type == "session.turn_started").event.turn_id  # type: ignore[union-attr]
    [posted] = [e for e in events if e.type == "outbox.message_posted"][-1:]
    assert posted.causation_id == posted.correlation_id == turn_id  # as for a turn's reply


async def test_a_pruning_shares_the_request_and_a_summary_waits_for_a_durable_start(
    tmp_path: Path,
) -> None:
    backend = AppendCountingBackend(tmp_path / "log.db")
    async with System.open(backend) as system:
        config = await fitted_config(system)
        model = ScriptedModel(researcher, name="researcher")
        await system.register_agent(config, model, tools=[fetch_tool()], summarizer=Summarizer())
        for number in range(10):
            answer = await system.send(AGENT, SESSION_KEY, f"read page {number}")
            assert answer.startswith("answer ")
        # A message that fills the window: its first request needs a summary.
        answer = await system.send(AGENT, SESSION_KEY, "read this: " + "z" * 40_000)
        assert answer.startswith("answer ")
        events = await system.store.read_stream(STREAM)
    appends = backend.session_appends(STREAM)
    compactions: list[Any] = [e.event for e in events if e.type == "session.compacted"]
    pruned_only = [c for c in compactions if not c.summary]
    summarized_first = {c.turn_id for c in compactions if c.summary and c.iteration == 1}
    assert pruned_only and summarized_first, "the session must prune, and summarize first"
    # A pruning decided before a request is in that request's append, just before it
    # (the append may go on: a request held with its step while the model answers).
    with_request = [a for a in appends if "session.compacted" in a]
    assert sum(a.count("session.compacted") for a in with_request) >= len(pruned_only)
    for append in with_request:
        if append != ["session.compacted"]:  # a summary's outcome is appended on its own
            for index, event_type in enumerate(append):
                if event_type == "session.compacted":
                    assert append[index + 1] == "session.model_requested"
    # A turn's start goes with its first request, unless a summary must be written
    # first: then the start is durable (alone) before the summarizer is called.
    starts: list[Any] = [e.event for e in events if e.type == "session.turn_started"]
    start_appends = [a for a in appends if "session.turn_started" in a]
    assert len(start_appends) == len(starts)
    for start, append in zip(starts, start_appends, strict=True):
        if start.turn_id in summarized_first:
            assert append[-1] == "session.turn_started"
        else:
            assert append[-1] == "session.model_requested"


async def test_a_turn_whose_only_events_are_the_shared_append_resumes_on_start(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    gated = GatedModel([])
    async with System.open(log) as system:
        await system.register_agent(AgentConfig(key="main"), gated)
        sending = asyncio.create_task(system.send("main", "s", "hello", channel="web", chat_id="c"))
        await wait_threading_event(gated.started)
        events = await system.store.read_stream("session/main/s")
    with pytest.raises(ActorDead):
        await sending
    assert [t for t in types(events) if t.startswith("session.")] == [
        "session.started",
        "session.turn_started",
        "session.model_requested",
    ]
    answer = ScriptedModel(lambda request: reply(f"resumed: {request.messages[-1].content}"))
    async with System.open(log) as system:
        async with system.outbox() as outbox:
            await system.register_agent(AgentConfig(key="main"), answer)
            message = await asyncio.wait_for(anext(outbox), 60)
        status = await system.session_status("main", "s")
    assert (message.session_key, message.text, message.resumed) == ("s", "resumed: hello", True)
    assert (status.busy, status.turns_completed) == (False, 1)


async def test_a_first_request_the_store_refuses_leaves_no_started_turn_behind(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.db"
    echo = ScriptedModel(lambda request: reply(f"echo: {request.messages[-1].content}"))
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), echo)
        assert await system.send("main", "s", "first") == "echo: first"
    with sqlite3.connect(path) as db:  # the file refuses the request of one turn
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON events WHEN NEW.type = "
            "'session.model_requested' AND (SELECT count(*) FROM events WHERE type = "
            "'session.turn_started') = 2 BEGIN SELECT RAISE(ABORT, 'refused by the disk'); END"
        )
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), echo)
        with pytest.raises(TurnFailedError) as failed:
            await system.send("main", "s", "second", timeout=60)
        assert failed.value.reason == "store_error"
        with sqlite3.connect(path) as db:
            db.execute("DROP TRIGGER refuse")
        assert await system.send("main", "s", "third", timeout=60) == "echo: third"
        events = await system.store.read_stream("session/main/s")
    turns: list[Any] = [e.event for e in events if e.type.startswith("session.turn_")]
    # The refused turn's start went with its request: only its end is in the log.
    assert [type(t).__name__ for t in turns] == [
        "TurnStarted",
        "TurnCompleted",
        "TurnFailed",
        "TurnStarted",
        "TurnCompleted",
    ]
    refused = turns[2].turn_id
    assert turns[2].reason == "store_error" and refused not in (turns[0].turn_id, turns[3].turn_id)
    requested: list[Any] = [e.event for e in events if e.type == "session.model_requested"]
    assert refused not in {r.turn_id for r in requested}


# -- the later boundaries of a turn: reply, tool calls, results, end --------------------

AGENT_KEY, KEY = "main", "s"
SESSION_STREAM = f"session/{AGENT_KEY}/{KEY}"
OPENING = ["session.started", "session.turn_started", "session.model_requested"]
CALL_STARTS = ["session.model_replied", "tool.call_requested", "tool.call_started"]
RESULT_AND_REQUEST = ["tool.call_completed", "session.model_requested"]
ENDED = ["session.model_replied", "session.turn_completed", "outbox.message_posted"]


def three_steps(request: ModelRequest) -> ModelReply:
    """Three model steps with one ``lookup`` call each, then a final text."""
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < 3:
        return call("lookup", key=f"k{done}")
    return reply(f"found {done}")


def lookup_tool(
    side_effects: SideEffects = "external",
    gate: asyncio.Event | None = None,
    approval_for: Callable[[Any], bool] | None = None,
) -> tuple[FunctionTool, list[str], threading.Event]:
    """A ``lookup`` tool, the keys it ran with, and an event set when it runs. With
    ``gate`` it waits for it (a slow tool) before answering; ``approval_for`` is its
    per-call approval check."""
    ran: list[str] = []
    running = threading.Event()

    async def lookup(ctx: object, args: dict[str, Any]) -> str:
        ran.append(str(args["key"]))
        running.set()
        if gate is not None:
            await gate.wait()
        return f"value of {args['key']}"

    tool = FunctionTool(
        "lookup",
        lookup,
        description="Look a key up",
        parameters={
            "type": "object",
            "properties": {"key": {"type": "string"}},
            "required": ["key"],
        },
        approval_for=approval_for,
        side_effects=side_effects,
    )
    return tool, ran, running


async def crashed_turn(system: System, text: str) -> tuple[TurnFailedError, list[Any]]:
    """Send ``text`` in a turn that fails: the error its sender hears, and the session's
    events once the restarted session has recorded the turn's end."""
    with pytest.raises(TurnFailedError) as failed:
        await system.send(AGENT_KEY, KEY, text, timeout=60)
    await asyncio.wait_for(wait_for_type(system, SESSION_STREAM, "session.turn_failed"), 60)
    return failed.value, await system.store.read_stream(SESSION_STREAM)


class HangsAfterOneCall:
    """A model whose first reply asks for one ``lookup`` and whose next request never
    gets an answer (the process stops while it is out)."""

    def __init__(self) -> None:
        self.requests = 0
        self.waiting = threading.Event()

    @property
    def name(self) -> str:
        return "hangs"

    @property
    def provider(self) -> str:
        return "scripted"

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests += 1
        if self.requests == 1:
            return call("lookup", key="k0")
        self.waiting.set()
        await asyncio.Event().wait()
        raise AssertionError("never answered")


async def wait_for_type(system: System, stream: str, event_type: str) -> None:
    async with system.store.subscribe(1, stream_prefix=stream) as events:
        async for recorded in events:
            if recorded.stream == stream and recorded.type == event_type:
                return


async def test_a_turn_of_three_calls_with_effects_is_two_commits_a_model_step(
    tmp_path: Path,
) -> None:
    backend = AppendCountingBackend(tmp_path / "log.db")
    tool, ran, _ = lookup_tool("external")
    async with System.open(backend) as system:
        await system.register_agent(
            AgentConfig(key=AGENT_KEY), ScriptedModel(three_steps), tools=[tool]
        )
        assert await system.send(AGENT_KEY, KEY, "look three keys up") == "found 3"
    appends = backend.session_appends(SESSION_STREAM)
    # Each model step: its request (with the previous step's result), then its reply with
    # what it leads to (the starts of its calls, durable before they run; or the end).
    assert appends == [
        OPENING,
        CALL_STARTS,
        RESULT_AND_REQUEST,
        CALL_STARTS,
        RESULT_AND_REQUEST,
        CALL_STARTS,
        RESULT_AND_REQUEST,
        ENDED,
    ]
    assert ran == ["k0", "k1", "k2"]
    model_steps, side_effecting_calls = 4, 3
    # Issue 24's goal is one commit a model step plus one a side-effecting call; the
    # turn's start (the user's message, durable before anything is done) is one more.
    assert len(appends) <= model_steps + side_effecting_calls + 1


@pytest.mark.parametrize("read_hold_s", [60.0, 0.0])
async def test_a_turn_of_three_calls_that_only_read_is_its_start_and_one_held_commit(
    tmp_path: Path, read_hold_s: float
) -> None:
    backend = AppendCountingBackend(tmp_path / "log.db")
    tool, ran, _ = lookup_tool("none")
    config = AgentConfig(key=AGENT_KEY, read_hold_s=read_hold_s)
    async with System.open(backend) as system:
        await system.register_agent(config, ScriptedModel(three_steps), tools=[tool])
        assert await system.send(AGENT_KEY, KEY, "look three keys up") == "found 3"
    appends = backend.session_appends(SESSION_STREAM)
    assert ran == ["k0", "k1", "k2"]
    if read_hold_s == 0:  # holding off: as for calls with effects
        assert len(appends) == 8
        return
    # A reply whose calls only read waits for their results, and the next request for
    # its reply (a crash before the append only makes a restart ask the model again from
    # the turn's start and run the reads again): after the start, the turn's steps are
    # one commit. The hold (60 s here, far longer than the turn takes) never runs out.
    assert appends == [OPENING, (CALL_STARTS + RESULT_AND_REQUEST) * 3 + ENDED]
    model_steps, side_effecting_calls = 4, 0
    assert len(appends) <= model_steps + side_effecting_calls


@pytest.mark.parametrize("blocking", ["tool", "model"])
async def test_a_process_killed_while_held_calls_run_asks_the_model_again(
    tmp_path: Path, blocking: str
) -> None:
    """Killed while a held read runs, or while the next request (held with that read's
    step) waits for its reply."""
    from tests.agents.held_calls_child import HELD, lookup_tool
    from tests.agents.held_calls_child import three_steps as child_steps

    log = tmp_path / "log.db"
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.agents.held_calls_child",
        str(log),
        blocking,
        stdout=asyncio.subprocess.PIPE,
        cwd=Path(__file__).parents[2],
    )
    assert child.stdout is not None
    said = b"started\n" if blocking == "tool" else b"asked\n"
    try:
        assert await asyncio.wait_for(child.stdout.readline(), 60) == said
    finally:
        os.kill(child.pid, signal.SIGKILL)
        assert await child.wait() == -signal.SIGKILL
    async with System.open(log) as system:
        events = await system.store.read_stream(SESSION_STREAM)
        # Nothing of the held step reached the log: its request is the last thing in it.
        assert [t for t in types(events) if not t.startswith("actor.")] == OPENING
        async with system.outbox() as outbox:
            await system.register_agent(
                HELD, ScriptedModel(child_steps), tools=[lookup_tool(block=False)]
            )
            message = await asyncio.wait_for(anext(outbox), 60)
        events = await system.store.read_stream(SESSION_STREAM)
    # The resumed turn asks the model again and runs the call again: nothing was lost
    # that a restart could not redo, and nothing ran twice that has an effect.
    assert (message.text, message.resumed) == ("found 3", True)
    assert types(events).count("session.turn_completed") == 1
    assert types(events).count("tool.call_started") == 3
    assert "tool.call_resume_decided" not in types(events)


class WaitsForItsRequest:
    """:func:`three_steps`, whose second request waits until that request is in the log:
    it is held with the step before it, so it gets there only when the hold runs out
    (``read_hold_s``) while the model is still answering."""

    name, provider = "waits", "scripted"

    def __init__(self) -> None:
        self.system: System | None = None
        self.requests = 0

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests += 1
        if self.requests == 2:
            assert self.system is not None
            await wait_for_type(self.system, SESSION_STREAM, "tool.call_completed")
        return three_steps(request)


async def test_a_hold_that_runs_out_while_the_model_answers_appends_the_held_step(
    tmp_path: Path,
) -> None:
    backend = AppendCountingBackend(tmp_path / "log.db")
    tool, ran, _ = lookup_tool("none")
    model = WaitsForItsRequest()
    config = AgentConfig(key=AGENT_KEY, read_hold_s=0.05)
    async with System.open(backend) as system:
        model.system = system
        await system.register_agent(config, model, tools=[tool])
        assert await system.send(AGENT_KEY, KEY, "look three keys up", timeout=60) == "found 3"
        events = await system.store.read_stream(SESSION_STREAM)
    appends = backend.session_appends(SESSION_STREAM)
    # The first step (reply, start, result) and the request after it were held while the
    # model answered; when the hold ran out they were appended, in one commit, before the
    # reply came (the model waited for them): a reader of the log sees the request out.
    assert appends[:2] == [OPENING, CALL_STARTS + RESULT_AND_REQUEST]
    assert model.requests == 4 and ran == ["k0", "k1", "k2"]
    session_types = [t for t in types(events) if not t.startswith("actor.")]
    assert session_types == OPENING + (CALL_STARTS + RESULT_AND_REQUEST) * 3 + ENDED
    assert [t for append in appends for t in append] == session_types  # each once, in order


@pytest.mark.parametrize("read_hold_s", [60.0, 0.0])
async def test_a_daily_budget_counts_the_replies_a_hold_has_not_appended_yet(
    tmp_path: Path, read_hold_s: float
) -> None:
    """The daily ledger counts a reply when it is appended; a held reply is appended with
    the turn's end, so the next request's check adds the held replies' usage itself."""
    spending = 10_000  # tokens a reply

    def costly(request: ModelRequest) -> ModelReply:
        answer = three_steps(request)
        return msgspec.structs.replace(
            answer, usage=Usage(input_tokens=spending // 2, output_tokens=spending // 2)
        )

    tool, ran, _ = lookup_tool("none")
    budgets = Budgets(agent_daily=BudgetLimits(max_tokens=25_000))
    config = AgentConfig(key=AGENT_KEY, read_hold_s=read_hold_s, max_tokens=100)
    async with System.open(tmp_path / "log.db", budgets=budgets) as system:
        await system.register_agent(config, ScriptedModel(costly), tools=[tool])
        with pytest.raises(TurnFailedError) as failed:
            await system.send(AGENT_KEY, KEY, "look three keys up", timeout=60)
        events = await system.store.read_stream(SESSION_STREAM)
    # Two replies (20,000 tokens) leave no room for a third request, held or not.
    assert failed.value.reason == "budget_exceeded"
    [exceeded] = [e.event for e in events if e.type == "session.budget_exceeded"]
    assert (exceeded.scope, exceeded.iteration, exceeded.spent) == ("agent", 3, 2 * spending)  # type: ignore[union-attr]
    assert ran == ["k0", "k1"]


def breaks_on_second_call(args: Any) -> bool:
    """An approval check with a defect: it breaks on the second call (``k1``)."""
    if args.get("key") == "k1":
        raise RuntimeError("the approval check broke")
    return False


async def test_a_step_that_fails_keeps_the_steps_held_before_it(tmp_path: Path) -> None:
    breaks, ran, _ = lookup_tool("none", approval_for=breaks_on_second_call)
    backend = AppendCountingBackend(tmp_path / "log.db")
    config = AgentConfig(key=AGENT_KEY, read_hold_s=3600.0)  # held to the end
    async with System.open(backend) as system:
        await system.register_agent(config, ScriptedModel(three_steps), tools=[breaks])
        failed, events = await crashed_turn(system, "look three keys up")
    assert failed.reason == "crashed" and ran == ["k0"]
    # The first step (its reply with its usage, the call, its result) and the request
    # after it were held when the second reply's step failed: they go into the log on
    # their own, before the failure, and the failing reply does not.
    assert [*CALL_STARTS, *RESULT_AND_REQUEST] in backend.appends[SESSION_STREAM]
    session_types = [t for t in types(events) if not t.startswith("actor.")]
    assert session_types[: len(OPENING) + 5] == OPENING + CALL_STARTS + RESULT_AND_REQUEST
    assert session_types.count("session.model_replied") == 1
    assert session_types[-1] == "session.turn_failed"


async def stop_while_a_call_runs(
    log: Path, config: AgentConfig, tool: FunctionTool, running: threading.Event, until: str = ""
) -> list[Any]:
    """Start a turn of :func:`three_steps` whose call never ends, wait until it runs (and
    until an ``until`` event is in the log), then stop the System; the session's events
    as they were before the stop."""
    async with System.open(log) as system:
        await system.register_agent(config, ScriptedModel(three_steps), tools=[tool])
        sending = asyncio.create_task(system.send(AGENT_KEY, KEY, "look three keys up"))
        await wait_threading_event(running)
        if until:
            await asyncio.wait_for(wait_for_type(system, SESSION_STREAM, until), 60)
        events = await system.store.read_stream(SESSION_STREAM)
    with pytest.raises(ActorDead):
        await sending
    return events


async def test_a_stop_while_held_calls_run_records_them_and_the_restart_runs_them_again(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    gate = asyncio.Event()  # never set: the call is running when the process stops
    slow, ran, running = lookup_tool("none", gate)
    held = AgentConfig(key=AGENT_KEY, read_hold_s=3600.0)  # the hold never runs out
    events = await stop_while_a_call_runs(log, held, slow, running)
    # While the call ran, its step was held: the request is the last thing recorded.
    assert [t for t in types(events) if not t.startswith("actor.")] == OPENING
    quick, ran_again, _ = lookup_tool("none")
    async with System.open(log) as system:
        stopped = await system.store.read_stream(SESSION_STREAM)
        async with system.outbox() as outbox:
            await system.register_agent(held, ScriptedModel(three_steps), tools=[quick])
            message = await asyncio.wait_for(anext(outbox), 60)
        events = await system.store.read_stream(SESSION_STREAM)
    # A clean stop appends what was held with its actor.stopped (the reply came and the
    # call started); the restart runs the call again, as any call that only reads.
    assert types(stopped)[-4:] == [*CALL_STARTS, "actor.stopped"]
    assert len({e.recorded_at for e in stopped[-4:]}) == 1
    assert (message.text, message.resumed) == ("found 3", True)
    assert ran == ["k0"] and ran_again == ["k0", "k1", "k2"]
    assert types(events).count("session.turn_completed") == 1
    assert "tool.call_resume_decided" in types(events)


async def test_a_crash_while_the_calls_run_finds_the_reply_and_their_starts_together(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    gate = asyncio.Event()  # never set: the call is running when the process stops
    slow, ran, running = lookup_tool("none", gate)
    # A call that only reads and runs past AgentConfig.read_hold_s has its start appended
    # then, with its reply: a reader of the log sees it running.
    config = AgentConfig(key=AGENT_KEY)
    events = await stop_while_a_call_runs(log, config, slow, running, until="tool.call_started")
    session_events = [e for e in events if not e.type.startswith("actor.")]
    assert types(session_events)[-3:] == CALL_STARTS
    assert len({e.recorded_at for e in session_events[-3:]}) == 1  # one transaction
    # A side-effect free call is run again (its start is durable); the turn completes.
    quick, ran_again, _ = lookup_tool("none")
    async with System.open(log) as system:
        async with system.outbox() as outbox:
            await system.register_agent(
                AgentConfig(key=AGENT_KEY), ScriptedModel(three_steps), tools=[quick]
            )
            message = await asyncio.wait_for(anext(outbox), 60)
        events = await system.store.read_stream(SESSION_STREAM)
    assert (message.text, message.resumed) == ("found 3", True)
    assert ran == ["k0"] and ran_again == ["k0", "k1", "k2"]
    assert types(events).count("session.turn_completed") == 1


async def test_a_crash_during_the_next_request_keeps_the_result_that_shared_its_commit(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    tool, ran, _ = lookup_tool()  # external: a result no restart could redo
    hangs = HangsAfterOneCall()
    async with System.open(log) as system:
        await system.register_agent(AgentConfig(key=AGENT_KEY), hangs, tools=[tool])
        sending = asyncio.create_task(system.send(AGENT_KEY, KEY, "look a key up"))
        await wait_threading_event(hangs.waiting)  # the second request is out
        events = await system.store.read_stream(SESSION_STREAM)
    with pytest.raises(ActorDead):
        await sending
    session_events = [e for e in events if not e.type.startswith("actor.")]
    assert types(session_events)[-2:] == RESULT_AND_REQUEST
    assert session_events[-2].recorded_at == session_events[-1].recorded_at
    async with System.open(log) as system:
        async with system.outbox() as outbox:
            await system.register_agent(
                AgentConfig(key=AGENT_KEY), ScriptedModel(three_steps), tools=[tool]
            )
            message = await asyncio.wait_for(anext(outbox), 60)
        events = await system.store.read_stream(SESSION_STREAM)
    # The result was durable: the resumed turn goes on from it, and the first call is
    # not run again (nor recorded as interrupted).
    assert ran[0] == "k0" and ran.count("k0") == 1
    assert "tool.call_failed" not in types(events)
    assert (message.text, message.resumed) == ("found 3", True)


async def test_a_crash_during_the_last_request_leaves_no_reply_without_its_end(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    tool, _, _ = lookup_tool()
    hangs = HangsAfterOneCall()
    async with System.open(log) as system:
        await system.register_agent(AgentConfig(key=AGENT_KEY), hangs, tools=[tool])
        sending = asyncio.create_task(system.send(AGENT_KEY, KEY, "look a key up"))
        await wait_threading_event(hangs.waiting)  # the request whose reply ends the turn
    with pytest.raises(ActorDead):
        await sending
    answers = ScriptedModel(lambda request: reply("the value is known"))
    async with System.open(log) as system:
        async with system.outbox() as outbox:
            await system.register_agent(AgentConfig(key=AGENT_KEY), answers, tools=[tool])
            message = await asyncio.wait_for(anext(outbox), 60)
        events = await system.store.read_stream(SESSION_STREAM)
    assert (message.text, message.resumed) == ("the value is known", True)
    # The final reply, the turn's end and its outbox message are one append: in the log
    # together or not at all.
    final = [e for e in events if not e.type.startswith("actor.")][-3:]
    assert types(final) == ENDED
    assert len({e.recorded_at for e in final}) == 1
    assert types(events).count("outbox.message_posted") == 1


@pytest.mark.parametrize("side_effects", ["external", "none"])
async def test_a_result_is_kept_when_the_next_request_cannot_be_planned(
    tmp_path: Path, side_effects: SideEffects
) -> None:
    backend = AppendCountingBackend(tmp_path / "log.db")
    tool, ran, running = lookup_tool(side_effects)
    config = AgentConfig(key=AGENT_KEY, read_hold_s=3600.0)  # held to the end if it reads

    def failing_section(config: AgentConfig, ctx: Any) -> tuple[str, str] | None:
        if running.is_set():  # planning the request after the call's result
            raise RuntimeError("the prompt section broke")
        return None

    async with System.open(backend) as system:
        system.prompt_for(AGENT_KEY).add_section("breaks", failing_section)
        await system.register_agent(config, ScriptedModel(three_steps), tools=[tool])
        # The sender hears it first; the restarted session then records the turn's end.
        failed, events = await crashed_turn(system, "look a key up")
    assert failed.reason == "crashed" and ran == ["k0"]
    # The request never went out, but the result is in the log, on its own (the call may
    # have had an effect; one that only reads, with its held reply and start), and the
    # turn ends without calling the call interrupted.
    alone = (
        ["tool.call_completed"]
        if side_effects == "external"
        else [*CALL_STARTS, "tool.call_completed"]
    )
    assert alone in backend.appends[SESSION_STREAM]
    assert "tool.call_failed" not in types(events)
    assert types(events).count("session.turn_failed") == 1
