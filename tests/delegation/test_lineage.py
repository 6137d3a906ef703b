"""Lineage: a request's chain from the asking turn to the delivered outcome; outcomes that
never reached their caller are found and delivered after a restart, once."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from clawlog import AgentConfig, ScriptedModel, System, call, reply
from clawlog.actors.providers import ModelReply, ModelRequest
from clawlog.events import EventStore, RecordedEvent
from clawlog.projections.read_models.lineage import Lineage, read_lineage, read_unreturned
from tests.delegation.lineage_child import (
    BLOCK_CALL,
    DELEGATE_CALL,
    SPAWN_CALL,
    boss_brain,
    start,
    unblocked_brain,
    wait_for_types,
)

ROOT = Path(__file__).resolve().parents[2]
BOSS = "session/boss/s1"


async def turn_starts(store: EventStore, stream: str) -> list[RecordedEvent]:
    return [e for e in await store.read_stream(stream) if e.type == "session.turn_started"]


async def delivered(system: System, sender: str) -> RecordedEvent:
    """The boss's turn from ``sender``, once it is in the log."""
    await wait_for_types(system, ["session.turn_started"], sender=sender)
    return next(
        e
        for e in await turn_starts(system.store, BOSS)
        if e.event.sender == sender  # type: ignore[union-attr]
    )


async def test_a_delegation_and_a_subagent_show_their_whole_chain(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await start(system, ScriptedModel(unblocked_brain))
        assert await system.send("boss", "s1", "go") == "asked the worker and a subagent"
        await wait_for_types(system, ["delegation.announced", "subagent.finished"])
        requested = await system.store.read_all(1, 100, types=["delegation.requested"])
        dg = requested[0].event.delegation_id  # type: ignore[union-attr]
        spawned = await system.store.read_all(1, 100, types=["subagent.spawned"])
        task_id = spawned[0].event.task_id  # type: ignore[union-attr]
        announcement = await delivered(system, f"delegate:{dg}")
        sub_announcement = await delivered(system, "subagent")
        user_turn = (await turn_starts(system.store, BOSS))[0]

        (chain,) = await read_lineage(system.store, dg)
        assert (chain.kind, chain.id, chain.mode, chain.source, chain.target) == (
            "delegation",
            dg,
            "async",
            "boss",
            "worker",
        )
        assert (chain.source_session, chain.call_id) == (BOSS, DELEGATE_CALL)
        assert chain.turn_id == user_turn.event.turn_id  # type: ignore[union-attr]
        assert chain.asked_turn is not None and chain.asked_turn.position == user_turn.position
        assert chain.asked_call is not None and chain.asked_call.call_id == DELEGATE_CALL
        assert chain.request.stream == "link/boss->worker"
        assert chain.asked_call.position < chain.request.position
        (worked,) = chain.worked
        assert worked.stream == f"session/worker/delegate-{dg}"
        assert chain.outcome is not None
        assert (chain.outcome.status, chain.outcome.result) == (
            "completed",
            "the report is written",
        )
        assert chain.request.position < worked.position < chain.outcome.position
        assert chain.delivery is not None and chain.delivered is True
        assert (chain.delivery.stream, chain.delivery.position) == (BOSS, announcement.position)

        # The envelopes carry the same chain.
        link = await system.store.read_stream("link/boss->worker")
        request = next(e for e in link if e.type == "delegation.requested")
        outcome = next(e for e in link if e.type == "delegation.completed")
        announced = next(e for e in link if e.type == "delegation.announced")
        target_turn = (await turn_starts(system.store, worked.stream))[0]
        # request <- asking call; target's turn <- delegation; outcome <- target's turn;
        # announcement turn <- the outcome event (its position).
        assert (request.correlation_id, request.causation_id) == (chain.turn_id, DELEGATE_CALL)
        assert target_turn.causation_id == dg
        assert outcome.causation_id == target_turn.event.turn_id  # type: ignore[union-attr]
        assert announcement.causation_id == str(outcome.position)
        assert outcome.position == chain.outcome.position
        assert announced.event.turn_id == announcement.event.turn_id  # type: ignore[union-attr]

        (sub,) = await read_lineage(system.store, task_id)
        assert (sub.kind, sub.mode, sub.call_id, sub.turn_id) == (
            "subagent",
            "async",
            SPAWN_CALL,
            chain.turn_id,
        )
        assert [w.stream for w in sub.worked] == [f"subagent/{task_id}"]
        assert sub.outcome is not None and sub.outcome.result == "42 files"
        assert sub.delivered is True and sub.delivery is not None
        assert sub.delivery.stream == BOSS and sub.delivery.position > sub.outcome.position
        # The same chain in the subagent's envelopes.
        agent = await system.store.read_stream("agent/boss")
        spawn = next(e for e in agent if e.type == "subagent.spawned")
        finished = next(e for e in agent if e.type == "subagent.finished")
        run_turn = (await turn_starts(system.store, f"subagent/{task_id}"))[0]
        assert (spawn.correlation_id, spawn.causation_id) == (chain.turn_id, SPAWN_CALL)
        assert run_turn.causation_id == task_id
        assert finished.position == sub.outcome.position
        assert sub_announcement.causation_id == str(finished.position)
        assert sub.delivery.position == sub_announcement.position

        # A call id names its request; the caller's turn id names every request it made.
        assert [c.id for c in await read_lineage(system.store, SPAWN_CALL)] == [task_id]
        assert {c.id for c in await read_lineage(system.store, chain.turn_id)} == {dg, task_id}
        assert await read_lineage(system.store, "no-such-id") == []
        assert await read_unreturned(system.store) == []

    printed = (await cli(tmp_path / "log.db", "lineage", dg)).decode().splitlines()
    assert [line.split()[0] for line in printed[1:]] == [
        "asked",
        "requested",
        "worked",
        "outcome",
        "delivered",
    ]
    assert printed[-1].startswith(f"  delivered  {BOSS}  turn {announcement.event.turn_id}")  # type: ignore[union-attr]


async def start_child(mode: str, log: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.delegation.lineage_child",
        mode,
        str(log),
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )


async def run_until_killed(mode: str, log: Path, line: bytes) -> None:
    """Run the child until it prints ``line``, then SIGKILL it."""
    child = await start_child(mode, log)
    assert child.stdout is not None
    assert await asyncio.wait_for(child.stdout.readline(), 120) == line
    os.kill(child.pid, signal.SIGKILL)
    assert await child.wait() == -signal.SIGKILL


async def cli(log: Path, *args: str) -> bytes:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "clawlog",
        *args,
        "--db",
        str(log),
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0
    return out


def ids(chains: list[Lineage]) -> list[tuple[str, str]]:
    return [(c.kind, c.id) for c in chains]


async def test_results_lost_by_a_kill_are_listed_and_delivered_once_after_restart(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    # Killed with both outcomes recorded while the boss's turn blocks: neither result
    # could start a turn in the boss's session.
    await run_until_killed("outcome", log, b"outcomes\n")
    listed = json.loads(await cli(log, "delegations", "--unreturned", "--json"))
    assert sorted(row["kind"] for row in listed) == ["delegation", "subagent"]
    async with System.open(log) as system:  # no agents: nothing runs, the log is read
        lost = await read_unreturned(system.store)
        dg = next(c.id for c in lost if c.kind == "delegation")
        task_id = next(c.id for c in lost if c.kind == "subagent")
        assert sorted(ids(lost)) == [("delegation", dg), ("subagent", task_id)]
        assert all(c.outcome is not None and c.delivery is None for c in lost)
        assert sorted(row["id"] for row in listed) == sorted(c.id for c in lost)
        assert BLOCK_CALL not in {c.call_id for c in lost}

    async with System.open(log) as system:
        await start(system, ScriptedModel(boss_brain))
        first = await delivered(system, f"delegate:{dg}")
        await wait_for_types(system, ["delegation.announced"], delegation_id=dg)
        sub_turn = await delivered(system, "subagent")
        assert await read_unreturned(system.store) == []
        # Announced after the restart, still caused by the outcome events (folded with
        # their positions).
        link = await system.store.read_stream("link/boss->worker")
        outcome = next(e for e in link if e.type == "delegation.completed")
        agent = await system.store.read_stream("agent/boss")
        finished = next(e for e in agent if e.type == "subagent.finished")
        assert first.causation_id == str(outcome.position)
        assert sub_turn.causation_id == str(finished.position)
        senders = [e.event.sender for e in await turn_starts(system.store, BOSS)]  # type: ignore[union-attr]
        assert senders.count(f"delegate:{dg}") == 1 and senders.count("subagent") == 1
        (chain,) = await read_lineage(system.store, dg)
        assert chain.delivery is not None and chain.delivery.position == first.position


async def test_an_announcement_delivered_before_a_kill_is_not_delivered_again(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    await run_until_killed("outcome", log, b"outcomes\n")
    # Killed once the announcement's turn is in the log, before the link records it.
    await run_until_killed("announcing", log, b"announcing\n")
    async with System.open(log) as system:
        requested = await system.store.read_all(1, 100, types=["delegation.requested"])
        dg = requested[0].event.delegation_id  # type: ignore[union-attr]
        link = [e.type for e in await system.store.read_stream("link/boss->worker")]
        assert "delegation.announced" not in link
        assert [c.id for c in await read_unreturned(system.store) if c.kind == "delegation"] == []

        await start(system, ScriptedModel(boss_brain))
        await wait_for_types(system, ["delegation.announced"], delegation_id=dg)
        starts = await turn_starts(system.store, BOSS)
        delivering = [e for e in starts if e.event.sender == f"delegate:{dg}"]  # type: ignore[union-attr]
        assert len(delivering) == 1
        announced = next(
            e
            for e in await system.store.read_stream("link/boss->worker")
            if e.type == "delegation.announced"
        )
        assert announced.event.turn_id == delivering[0].event.turn_id  # type: ignore[union-attr]


async def test_a_handoff_made_by_a_tool_call_shows_its_chain(tmp_path: Path) -> None:
    def front(request: ModelRequest) -> ModelReply:
        if request.messages[-1].role == "user":
            return call("handoff", call_id="c-handoff", agent="billing", reason="an invoice")
        return reply("handed over")

    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="front"), ScriptedModel(front))
        billing = ScriptedModel(lambda request: reply("billing here"))
        await system.register_agent(AgentConfig(key="billing"), billing)
        assert await system.send("front", "chat1", "hi", channel="web", chat_id="c1") == (
            "handed over"
        )
        await wait_for_types(system, ["session.turn_started"], sender="handoff:front")
        (chain,) = await read_lineage(system.store, "c-handoff")
        user_turn = (await turn_starts(system.store, "session/front/chat1"))[0]
        intro = (await turn_starts(system.store, "session/billing/chat1"))[0]
        handoff = await system.store.read_stream("handoff/web/c1")
        routed = next(e for e in handoff if e.type == "handoff.routed")
    assert (chain.kind, chain.source, chain.target, chain.task) == (
        "handoff",
        "front",
        "billing",
        "an invoice",
    )
    assert chain.turn_id == user_turn.event.turn_id  # type: ignore[union-attr]
    assert chain.asked_call is not None and chain.asked_call.call_id == "c-handoff"
    assert chain.request.stream == "handoff/web/c1"
    assert chain.outcome is not None and chain.outcome.status == "routed"
    assert chain.delivery is not None and chain.delivery.position == intro.position
    # The handoff's envelopes: routed <- the asking call (in the asking turn); the
    # target's introduction turn <- the same call.
    assert (routed.correlation_id, routed.causation_id) == (chain.turn_id, "c-handoff")
    assert intro.causation_id == "c-handoff"
