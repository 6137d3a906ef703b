"""``clawlog lineage ID`` and ``clawlog delegations --unreturned`` on a written log: one
delegation delivered, one finished but never announced, a subagent result never
announced, a sync delegation whose call received it, and a handoff."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from clawlog.events import ANY, Event, EventMetadata, EventStore, open_store
from clawlog.events.domain.agent import (
    HandoffRouted,
    SubagentAnnounced,
    SubagentFinished,
    SubagentSpawned,
)
from clawlog.events.domain.delegation import (
    DelegationAnnounced,
    DelegationCompleted,
    DelegationFailed,
    DelegationMode,
    DelegationRequested,
)
from clawlog.events.domain.session import TurnStarted
from clawlog.events.domain.tool import ToolCallCompleted, ToolCallRequested
from tests.cli.support import assert_user_error, clawlog

BOSS = "session/boss/s1"
LINK = "link/boss->worker"
DELIVERED, LOST, SYNC, TASK, DONE_TASK = "dg-delivered", "dg-lost", "dg-sync", "sa-lost", "sa-done"


class _Writer:
    """Appends events with the envelopes the runtime writes."""

    def __init__(self, store: EventStore) -> None:
        self.store = store

    async def add(self, stream: str, event: Event, turn: str = "", cause: str = "") -> None:
        meta = EventMetadata(correlation_id=turn or None, causation_id=cause or None)
        await self.store.append(stream, [event], expected_version=ANY, metadata=meta)

    async def delegation(self, dg: str, call: str, mode: DelegationMode, result: str) -> None:
        """Asked by ``call`` in the boss's turn t1; the worker's turn completed it."""
        await self.add(BOSS, ToolCallRequested(call_id=call, tool="delegate"), "t1")
        requested = DelegationRequested(
            delegation_id=dg,
            source="boss",
            target="worker",
            task=f"task of {dg}",
            mode=mode,
            source_session=BOSS,
            source_key="s1",
            target_session=f"delegate-{dg}",
            call_id=call,
        )
        await self.add(LINK, requested, "t1", call)
        worker = f"session/worker/delegate-{dg}"
        await self.add(worker, TurnStarted(turn_id=f"w-{dg}", text="task", sender="delegate:boss"))
        if result:
            await self.add(
                LINK, DelegationCompleted(delegation_id=dg, result=result), "", f"w-{dg}"
            )

    async def subagent(self, task: str, call: str) -> None:
        await self.add(BOSS, ToolCallRequested(call_id=call, tool="spawn"), "t1")
        spawned = SubagentSpawned(
            task_id=task, parent_session=BOSS, task="count", parent_key="s1", call_id=call
        )
        await self.add("agent/boss", spawned, "t1", call)
        await self.add(f"subagent/{task}", TurnStarted(turn_id=f"w-{task}", text="count"))
        await self.add(
            "agent/boss", SubagentFinished(task_id=task, status="completed", result="42")
        )

    async def write(self) -> None:
        add = self.add
        await add(BOSS, TurnStarted(turn_id="t1", text="go"), "t1")
        await self.delegation(DELIVERED, "c1", "async", "the report")
        await add(BOSS, TurnStarted(turn_id="a1", text="r", sender=f"delegate:{DELIVERED}"), "a1")
        await add(LINK, DelegationAnnounced(delegation_id=DELIVERED, turn_id="a1"), "", "a1")
        await self.delegation(LOST, "c2", "async", "a result nobody read")
        await self.delegation(SYNC, "c3", "sync", "the sync answer")
        await add(BOSS, ToolCallCompleted(call_id="c3", tool="delegate"), "t1")
        await self.subagent(TASK, "c4")
        await self.subagent(DONE_TASK, "c5")
        announced = SubagentAnnounced(parent_session=BOSS, task_ids=[DONE_TASK], turn_id="a2")
        await add("agent/boss", announced)
        await add(BOSS, TurnStarted(turn_id="a2", text="results", sender="subagent"), "a2")
        await self.delegation("dg-failed", "c6", "async", "")
        failed = DelegationFailed(delegation_id="dg-failed", reason="timeout", message="late")
        await add(LINK, failed, "", "dg-failed")
        routed = HandoffRouted(
            channel="web", chat_id="c9", from_agent="boss", to_agent="worker", session_key="s1"
        )
        await add("handoff/web/c9", routed, "t1", "c7")
        intro = TurnStarted(turn_id="h1", text="yours", sender="handoff:boss")
        await add("session/worker/s1", intro, "h1", "c7")


def write_lineage_log(path: Path) -> None:
    async def main() -> None:
        store = await open_store(path)
        try:
            await _Writer(store).write()
        finally:
            await store.close()

    asyncio.run(main())


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("lineage") / "log.db"
    write_lineage_log(path)
    return str(path)


def run(log: str, *args: str) -> str:
    done = clawlog(*args, "--db", log)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_unreturned_lists_every_result_that_never_reached_its_caller(log: str) -> None:
    rows = json.loads(run(log, "delegations", "--unreturned", "--json"))
    assert [(r["kind"], r["id"]) for r in rows] == [
        ("delegation", LOST),
        ("subagent", TASK),
        ("delegation", "dg-failed"),
    ]
    assert all(r["delivered"] is False and r["delivery"] is None for r in rows)
    assert rows[0]["outcome"]["result"] == "a result nobody read"
    assert rows[0]["call_id"] == "c2" and rows[0]["turn_id"] == "t1"
    lines = run(log, "delegations", "--unreturned").splitlines()
    assert lines[0].split("\t")[:3] == ["requested", "kind", "id"]
    assert [line.split("\t")[2] for line in lines[1:]] == [LOST, TASK, "dg-failed"]
    limited = run(log, "delegations", "--unreturned", "--limit", "1").splitlines()
    assert len(limited) == 2


def test_lineage_prints_the_chain_up_to_its_delivery(log: str) -> None:
    lines = run(log, "lineage", DELIVERED).splitlines()
    assert lines[0] == f"delegation {DELIVERED} (async) boss -> worker: task of {DELIVERED}"
    assert lines[1].startswith(f"  asked      boss  {BOSS}  turn t1  call c1  @")
    assert lines[2].startswith(f"  requested  {LINK}  @")
    assert lines[3].startswith(f"  worked     worker  session/worker/delegate-{DELIVERED}  turn ")
    assert lines[4].startswith("  outcome    completed  @") and lines[4].endswith(": the report")
    assert lines[5].startswith(f"  delivered  {BOSS}  turn a1  @")
    lost = run(log, "lineage", LOST).splitlines()
    assert lost[-1] == "  delivered  not delivered"


def test_lineage_of_a_sync_call_a_subagent_and_a_handoff(log: str) -> None:
    (sync,) = json.loads(run(log, "lineage", "c3", "--json"))
    assert (sync["id"], sync["mode"], sync["delivered"]) == (SYNC, "sync", True)
    assert sync["delivery"]["call_id"] == "c3"
    assert sync["delivery"]["position"] > sync["outcome"]["position"]
    (task,) = json.loads(run(log, "lineage", DONE_TASK, "--json"))
    assert (task["kind"], task["delivered"], task["delivery"]["turn_id"]) == (
        "subagent",
        True,
        "a2",
    )
    assert [w["stream"] for w in task["worked"]] == [f"subagent/{DONE_TASK}"]
    (handoff,) = json.loads(run(log, "lineage", "c7", "--json"))
    assert (handoff["kind"], handoff["target"], handoff["outcome"]["status"]) == (
        "handoff",
        "worker",
        "routed",
    )
    assert handoff["delivery"]["turn_id"] == "h1"
    everything = json.loads(run(log, "lineage", "t1", "--json"))
    assert {c["id"] for c in everything} == {
        DELIVERED,
        LOST,
        SYNC,
        TASK,
        DONE_TASK,
        "dg-failed",
        "c7",
    }


def test_an_unknown_id_and_conflicting_options_are_refused_saying_what_to_do(log: str) -> None:
    assert_user_error(clawlog("lineage", "dg-nope", "--db", log), "dg-nope", "clawlog delegations")
    assert_user_error(
        clawlog("delegations", "--unreturned", "--overdue", "--db", log), "--unreturned"
    )
    assert_user_error(
        clawlog("delegations", "--unreturned", "--since", "2026-01-01", "--db", log), "position"
    )
