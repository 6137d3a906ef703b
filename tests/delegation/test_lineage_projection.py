"""The delegations read model flags a finished async result that never reached its caller:
delivered means the announcing turn started in the source session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clawlog.events import ANY, EventMetadata, SqliteBackend, open_store
from clawlog.events.domain.agent import SubagentAnnounced, SubagentFinished, SubagentSpawned
from clawlog.events.domain.delegation import (
    DelegationAnnounced,
    DelegationCompleted,
    DelegationRequested,
)
from clawlog.events.domain.session import TurnFailed, TurnStarted
from clawlog.events.domain.tool import ToolCallCompleted, ToolCallRequested
from clawlog.projections import DelegationReader, ProjectionRunner, ReadModels
from clawlog.projections.read_models.delegations import Delegations, overdue_delegations
from clawlog.projections.read_models.lineage import read_lineage, read_unreturned

LINK, BOSS = "link/boss->worker", "session/boss/s1"


def requested(dg: str, mode: str, deadline_s: float = 60.0) -> DelegationRequested:
    return DelegationRequested(
        delegation_id=dg,
        source="boss",
        target="worker",
        task="t",
        mode=mode,  # type: ignore[arg-type]
        source_session=BOSS,
        deadline_s=deadline_s,
        at=1000.0,
    )


async def test_overdue_delegations_flag_finished_results_not_delivered(tmp_path: Path) -> None:
    events = [
        requested("delivered", "async"),
        requested("promised", "async"),  # announced, but its turn never started
        requested("lost", "async"),
        requested("sync", "sync"),
        requested("late", "async", deadline_s=10.0),
        requested("running", "async", deadline_s=1000.0),
        DelegationCompleted(delegation_id="delivered", result="r", at=1001.0),
        DelegationCompleted(delegation_id="promised", result="r", at=1001.0),
        DelegationCompleted(delegation_id="lost", result="r", at=1001.0),
        DelegationCompleted(delegation_id="sync", result="r", at=1001.0),
        DelegationAnnounced(delegation_id="promised", turn_id="never"),
    ]
    async with (
        await open_store(SqliteBackend(tmp_path / "log.db")) as store,
        ProjectionRunner(store, None, [Delegations()]) as runner,
    ):
        runner.start()
        await store.append(LINK, events, ANY, EventMetadata(actor=LINK))
        # A target turn's sender names the source agent, never a delegation: no match.
        target = TurnStarted(turn_id="w", text="t", sender="delegate:boss")
        await store.append("session/worker/delegate-delivered", [target], ANY)
        announcing = TurnStarted(turn_id="a", text="r", sender="delegate:delivered")
        recorded = await store.append(BOSS, [announcing], ANY)
        async with ReadModels(runner.path, runner=runner) as models:
            reader = DelegationReader(models)
            await reader.wait_until(recorded[-1].position)
            flagged = await models.call(overdue_delegations, 1011.0)
            rows = {d.delegation_id: d.delivered for d in await reader.delegations()}
    assert flagged == ["promised", "lost", "late"]
    assert rows == {
        "delivered": True,
        "promised": False,
        "lost": False,
        "sync": False,
        "late": False,
        "running": False,
    }


@pytest.mark.parametrize("style", ["outcome position", "delegation id (before)"])
async def test_a_call_id_reused_in_a_later_turn_is_not_taken_for_the_first_turns_call(
    tmp_path: Path, style: str
) -> None:
    """Providers reuse call ids across turns (a counter restarting with the process): each
    request's asking call and sync delivery are the ones of its own turn. The second turn
    received the first one's result: caused by its outcome event (the position), or in a
    log from before by the delegation id; either way it is named by the delegation."""
    worker = "session/worker/delegate-{}"

    def turn(turn_id: str, dg: str, cause: str) -> list[tuple[str, list[Any], str, str | None]]:
        """One turn of the boss (caused by ``cause``): call c1 asks for a sync delegation
        ``dg``, which ends."""
        return [
            (BOSS, [TurnStarted(turn_id=turn_id, text="go")], turn_id, cause or None),
            (BOSS, [ToolCallRequested(call_id="c1", tool="delegate")], turn_id, None),
            (LINK, [requested(dg, "sync")], turn_id, "c1"),
            (worker.format(dg), [TurnStarted(turn_id=f"w-{dg}", text="t")], dg, dg),
            (LINK, [DelegationCompleted(delegation_id=dg, result=dg, at=1.0)], dg, f"w-{dg}"),
            (BOSS, [ToolCallCompleted(call_id="c1", tool="delegate", for_llm=dg)], turn_id, None),
        ]

    positions: dict[tuple[str, str, str], int] = {}
    async with await open_store(SqliteBackend(tmp_path / "log.db")) as store:
        # The second turn received the first one's result (as an async one's would be).
        for turn_id, dg in (("t1", "dg-first"), ("t2", "dg-second")):
            received = ""
            if turn_id == "t2":
                first_outcome = positions[("t1", LINK, "delegation.completed")]
                received = str(first_outcome) if style == "outcome position" else "dg-first"
            for stream, events, correlation, causation in turn(turn_id, dg, received):
                meta = EventMetadata(correlation_id=correlation, causation_id=causation)
                [recorded] = await store.append(stream, events, ANY, meta)
                positions[(turn_id, stream, recorded.type)] = recorded.position
        chains = {c.id: c for c in await read_lineage(store, "c1")}

    assert sorted(chains) == ["dg-first", "dg-second"]
    assert (chains["dg-first"].caused_by, chains["dg-second"].caused_by) == ("", "dg-first")
    for turn_id, dg in (("t1", "dg-first"), ("t2", "dg-second")):
        chain = chains[dg]
        assert chain.turn_id == turn_id
        assert chain.asked_turn is not None
        assert chain.asked_turn.position == positions[(turn_id, BOSS, "session.turn_started")]
        assert chain.asked_call is not None
        assert chain.asked_call.turn_id == turn_id
        assert chain.asked_call.position == positions[(turn_id, BOSS, "tool.call_requested")]
        assert chain.delivery is not None and chain.delivered is True
        assert chain.delivery.position == positions[(turn_id, BOSS, "tool.call_completed")]


async def test_a_delivering_turn_that_failed_is_shown_on_the_chain(tmp_path: Path) -> None:
    """The outcome reached the caller's session, but the turn that carried it failed: the
    chain says so (its model never answered the result)."""
    async with await open_store(SqliteBackend(tmp_path / "log.db")) as store:
        await store.append(LINK, [requested("dg-a", "async"), requested("dg-b", "async")], ANY)
        for dg in ("dg-a", "dg-b"):
            done = DelegationCompleted(delegation_id=dg, result="r", at=1.0)
            await store.append(LINK, [done], ANY)
            turn = TurnStarted(turn_id=f"t-{dg}", text="r", sender=f"delegate:{dg}")
            await store.append(BOSS, [turn], ANY, EventMetadata(causation_id=dg))
        failed = TurnFailed(turn_id="t-dg-a", reason="interrupted", message="a  restart\n went")
        await store.append(BOSS, [failed], ANY)
        chains = {c.id: c for c in await read_lineage(store, "dg-a")}
        chains |= {c.id: c for c in await read_lineage(store, "dg-b")}
        assert await read_unreturned(store) == []  # both reached the caller's session

    assert chains["dg-a"].delivered is True
    assert chains["dg-a"].delivery_failed == "interrupted: a restart went"
    assert chains["dg-b"].delivered is True and chains["dg-b"].delivery_failed == ""


async def test_a_log_written_before_lineage_still_reads(tmp_path: Path) -> None:
    """Events are forever: requests without call ids, announcements without turn ids and
    envelopes without causation ids read as delivered where the old runtime delivered
    them; only a result nothing announced is unreturned."""
    turn = EventMetadata(correlation_id="t1")
    async with await open_store(SqliteBackend(tmp_path / "log.db")) as store:
        await store.append(BOSS, [TurnStarted(turn_id="t1", text="go")], ANY, turn)
        await store.append(BOSS, [ToolCallRequested(call_id="c1", tool="delegate")], ANY, turn)
        old = [requested("dg-old", "async"), requested("dg-lost", "async")]
        await store.append(LINK, old, ANY, turn)
        spawned = SubagentSpawned(task_id="sa-old", parent_session=BOSS, task="count")
        await store.append("agent/boss", [spawned], ANY, turn)
        ends = [
            DelegationCompleted(delegation_id="dg-old", result="r", at=1.0),
            DelegationCompleted(delegation_id="dg-lost", result="r", at=1.0),
            DelegationAnnounced(delegation_id="dg-old"),
        ]
        await store.append(LINK, ends, ANY)
        finished = SubagentFinished(task_id="sa-old", status="completed", result="3")
        announced = SubagentAnnounced(parent_session=BOSS, task_ids=["sa-old"])
        await store.append("agent/boss", [finished, announced], ANY)
        old_turn = TurnStarted(turn_id="t2", text="r", sender="delegate:dg-old")
        [delivering] = await store.append(BOSS, [old_turn], ANY)

        lost = await read_unreturned(store)
        (old_chain,) = await read_lineage(store, "dg-old")
        (task,) = await read_lineage(store, "sa-old")
        in_turn = {c.id for c in await read_lineage(store, "t1")}

    assert [c.id for c in lost] == ["dg-lost"]
    assert (old_chain.call_id, old_chain.asked_call, old_chain.turn_id) == ("", None, "t1")
    assert old_chain.delivered is True and old_chain.delivery is not None
    assert old_chain.delivery.position == delivering.position
    assert task.delivered is True and task.delivery is None  # announced; the turn unnamed
    assert in_turn == {"dg-old", "dg-lost", "sa-old"}
