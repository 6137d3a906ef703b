"""The outbox: every message meant for a person, read by position, once, across restarts."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from clawlog import (
    AgentConfig,
    OutboxMessage,
    ScriptedModel,
    SubagentLimits,
    System,
    call,
    calls,
    reply,
)
from clawlog.actors.providers import ModelReply, ModelRequest
from clawlog.events import open_store

ROOT = Path(__file__).parents[2]


def last_text(request: ModelRequest) -> str:
    return request.messages[-1].content


def echo(name: str) -> ScriptedModel:
    return ScriptedModel(lambda request: reply(f"{name}: {last_text(request)}"))


def tool_then(first: ModelReply, answer: Callable[[ModelRequest], ModelReply]) -> ScriptedModel:
    """A model that makes one tool call for a user's message, then answers."""

    def brain(request: ModelRequest) -> ModelReply:
        last = request.messages[-1]
        if last.role == "user" and not last.content.startswith("["):
            return first
        return answer(request)

    return ScriptedModel(brain)


def post(call_id: str, **arguments: str) -> ModelReply:
    """A model reply calling the message tool (``call``'s own ``text`` is the reply's)."""
    return calls([("message", arguments)], ids=[call_id])


async def first_of_kind(system: System, kind: str, since: int = 0) -> OutboxMessage:
    async with system.outbox(since=since, kinds=[kind]) as outbox:
        return await asyncio.wait_for(anext(outbox), 30)


async def test_the_reply_to_send_is_in_the_outbox_with_its_conversation(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), echo("main"))
        answer = await system.send("main", "s1", "hello", channel="web", chat_id="c1", user="ann")
        assert answer == "main: hello"  # send still returns its own turn's reply
        [message] = [m async for m in system.outbox(follow=False)]
        assert (message.agent, message.session_key, message.stream) == (
            "main",
            "s1",
            "session/main/s1",
        )
        assert (message.channel, message.chat_id, message.user) == ("web", "c1", "ann")
        assert (message.text, message.kind, message.resumed) == ("main: hello", "reply", False)
        assert (message.sender, message.call_id) == ("user", "")
        assert message.correlation_id == message.causation_id == message.turn_id != ""
        [completed] = [
            e
            for e in await system.store.read_stream("session/main/s1")
            if e.type == "session.turn_completed"
        ]
        assert completed.position + 1 == message.position  # one append with the turn's end


async def test_the_message_tool_posts_to_the_outbox_during_the_turn(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            post("m1", text="working on it"),
            post("m2", text="fyi", channel="mail", chat_id="boss"),
            reply("all done"),
        ]
    )
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        assert await system.send("main", "s1", "go", channel="web", chat_id="c1") == "all done"
        messages = [m async for m in system.outbox(follow=False)]
        assert [(m.kind, m.text, m.channel, m.chat_id, m.call_id) for m in messages] == [
            ("message", "working on it", "web", "c1", "m1"),
            ("message", "fyi", "mail", "boss", "m2"),
            ("reply", "all done", "web", "c1", ""),
        ]
        assert [m.causation_id for m in messages[:2]] == ["m1", "m2"]
        assert len({m.turn_id for m in messages}) == 1
        assert [m.position for m in messages] == sorted(m.position for m in messages)
        only_mail = [m async for m in system.outbox(channel="mail", follow=False)]
        assert [m.text for m in only_mail] == ["fyi"]


async def test_a_denied_message_tool_posts_nothing(tmp_path: Path) -> None:
    model = ScriptedModel([post("m1", text="hi"), reply("fine")])
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main", tools_deny=["message"]), model)
        assert await system.send("main", "s1", "go") == "fine"
        assert [m.kind async for m in system.outbox(follow=False)] == ["reply"]


async def test_a_handoff_targets_introduction_is_in_the_outbox(tmp_path: Path) -> None:
    front = tool_then(
        call("handoff", agent="billing", reason="billing question"),
        lambda request: reply("handing you to billing"),
    )
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="front"), front)
        await system.register_agent(AgentConfig(key="billing"), echo("billing"))
        await system.send("front", "chat1", "my invoice", channel="web", chat_id="c1", user="ann")
        intro = await first_of_kind(system, "handoff")
        assert (intro.agent, intro.session_key, intro.sender) == (
            "billing",
            "chat1",
            "handoff:front",
        )
        assert (intro.channel, intro.chat_id, intro.user) == ("web", "c1", "ann")
        assert intro.text.startswith("billing: [handoff:front] [handoff from front]")


async def test_a_parents_answer_to_subagent_results_is_in_the_outbox(tmp_path: Path) -> None:
    def brain(request: ModelRequest) -> ModelReply:
        text = last_text(request)
        if text.startswith("[parent] "):
            return reply("42 files")
        if text.startswith("[subagent] "):
            return reply("the subagent found " + text.rsplit(": ", 1)[-1])
        if request.messages[-1].role == "user":
            return call("spawn", task="count the files", label="count")
        return reply("started a subagent")

    config = AgentConfig(key="main", subagents=SubagentLimits(announce_debounce_s=0.05))
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(config, ScriptedModel(brain))
        assert await system.send("main", "p", "count", channel="web", chat_id="c1") == (
            "started a subagent"
        )
        announced = await first_of_kind(system, "subagent")
        assert (announced.session_key, announced.sender) == ("p", "subagent")
        assert (announced.channel, announced.chat_id) == ("web", "c1")
        assert announced.text == "the subagent found 42 files"
        streams = {m.stream async for m in system.outbox(follow=False)}
        assert streams == {"session/main/p"}  # the subagent's own answer went to its parent


async def test_a_sources_answer_to_a_delegation_result_is_in_the_outbox(tmp_path: Path) -> None:
    def boss(request: ModelRequest) -> ModelReply:
        text = last_text(request)
        if text.startswith("[delegate:"):
            return reply("the worker says " + text.split("finished: ", 1)[-1])
        if request.messages[-1].role == "user":
            return call("delegate", agent="worker", task="write the report", mode="async")
        return reply("delegated")

    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="boss"), ScriptedModel(boss))
        await system.register_agent(AgentConfig(key="worker"), echo("worker"))
        await system.link_agents("boss", "worker")
        assert await system.send("boss", "s1", "report please", user="ann") == "delegated"
        relayed = await first_of_kind(system, "delegation")
        assert (relayed.agent, relayed.session_key, relayed.user) == ("boss", "s1", "ann")
        assert relayed.sender.startswith("delegate:")
        assert relayed.text.startswith("the worker says worker: ")
        agents = {m.agent async for m in system.outbox(follow=False)}
        assert agents == {"boss"}  # the worker's answer went back through the link


async def test_a_leads_answer_to_a_teammates_report_is_in_the_outbox(tmp_path: Path) -> None:
    def lead(request: ModelRequest) -> ModelReply:
        text = last_text(request)
        if text.startswith("[teammate:"):
            return reply("done: " + text.split("completed: ", 1)[-1])
        if request.messages[-1].role == "user":
            return call("team_tasks", action="create", subject="run tests", assignee="dev")
        return reply("posted")

    def dev(request: ModelRequest) -> ModelReply:
        last = request.messages[-1]
        found = re.search(r"(t\d+-\w+)", last.content)
        if last.role == "user" and found:
            return call("team_tasks", action="claim", task_id=found.group(1))
        if last.role == "tool" and "claimed" in last.content:
            task_id = re.search(r"(t\d+-\w+)", last.content).group(1)  # type: ignore[union-attr]
            return call("team_tasks", action="complete", task_id=task_id, result="tests green")
        return reply("ok")

    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="lead"), ScriptedModel(lead))
        await system.register_agent(AgentConfig(key="dev"), ScriptedModel(dev))
        await system.create_team("rel", name="Release", lead="lead", members=[("dev", "dev")])
        assert await system.send("lead", "boss", "ship it", channel="web", chat_id="c1") == "posted"
        report = await first_of_kind(system, "teammate")
        assert (report.agent, report.session_key, report.sender) == ("lead", "boss", "teammate:dev")
        assert (report.channel, report.chat_id, report.text) == ("web", "c1", "done: tests green")
        agents = {m.agent async for m in system.outbox(follow=False)}
        assert agents == {"lead"}  # the teammate's board work is not for a person


async def test_the_outbox_follows_live_and_filters(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), echo("main"))
        await system.send("main", "s1", "before", channel="web", chat_id="a")
        async with system.outbox(chat_id="b") as outbox:
            waiting = asyncio.ensure_future(anext(outbox))
            await system.send("main", "s2", "elsewhere", channel="web", chat_id="a")
            await system.send("main", "s3", "after", channel="web", chat_id="b")
            message = await asyncio.wait_for(waiting, 30)
        assert (message.text, message.chat_id) == ("main: after", "b")
        assert outbox.position == message.position
        with pytest.raises(ValueError, match="since"):
            system.outbox(since=-1)


async def test_an_outbox_being_followed_ends_when_the_system_closes(tmp_path: Path) -> None:
    system = await System.open(tmp_path / "log.db")
    outbox = system.outbox()
    waiting = asyncio.ensure_future(anext(outbox))
    await system.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(waiting, 30)


async def start_reader(log: Path, handled: Path, *options: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.agents.outbox_child",
        "reader",
        str(log),
        str(handled),
        *options,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )


async def test_a_killed_reader_resumes_from_its_saved_position_and_sees_each_message_once(
    tmp_path: Path,
) -> None:
    log, handled = tmp_path / "log.db", tmp_path / "handled.tsv"
    first = await start_reader(log, handled, "--produce", "6", "--gated")
    assert first.stdout is not None and first.stdin is not None
    for n in range(3):
        line = await asyncio.wait_for(first.stdout.readline(), 60)
        assert line.startswith(b"handled ")
        if n < 2:
            first.stdin.write(b"next\n")
    # Killed mid-stream: three of six handled, the fourth waits for the go it never gets.
    os.kill(first.pid, signal.SIGKILL)
    assert await first.wait() == -signal.SIGKILL
    first.stdin.close()
    assert len(handled.read_text().splitlines()) == 3

    second = await start_reader(log, handled, "--until", "8")
    assert second.stdout is not None
    out, _ = await asyncio.wait_for(second.communicate(), 60)
    assert second.returncode == 0 and out.decode().endswith("done\n")

    lines = [line.split("\t", 1) for line in handled.read_text().splitlines()]
    positions = [int(p) for p, _ in lines]
    assert positions == sorted(set(positions))  # each once, in order
    texts = [t for _, t in lines]
    assert texts == [f"echo: message {i}" for i in range(6)] + ["echo: live 0", "echo: live 1"]
    store = await open_store(log)
    try:
        logged = await store.read_all(1, 10_000, types=["outbox.message_posted"])
    finally:
        await store.close()
    assert [e.position for e in logged] == positions  # none lost


async def test_a_reader_whose_steps_time_out_still_sees_every_message_once(
    tmp_path: Path,
) -> None:
    # An application polling with wait_for(anext(outbox), short) cancels steps that may
    # already have taken an event off the subscription on the hub: none may be skipped.
    async with System.open(tmp_path / "app.db") as system:
        await system.register_agent(AgentConfig(key="main"), echo("main"))
        for n in range(60):
            await system.send("main", "s", f"m{n}")
        expected = [m.position async for m in system.outbox(follow=False)]
        assert len(expected) == 60
        seen: list[int] = []
        timeouts = 0
        async with system.outbox() as outbox:
            while len(seen) < len(expected):
                try:
                    message = await asyncio.wait_for(anext(outbox), 0.0002 * (1 + len(seen) % 7))
                except TimeoutError:
                    timeouts += 1
                    if timeouts > 100_000:
                        raise AssertionError(f"only {seen} of {expected}") from None
                    continue
                seen.append(message.position)
        assert seen == expected
