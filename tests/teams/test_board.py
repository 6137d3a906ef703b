"""The Team actor's board and mailbox: atomic claims, unblocking, bad input, restarts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from clawlog.actors import Rejected, System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ScriptedModel, reply
from clawlog.actors.teams.messages import (
    Broadcast,
    ClaimTask,
    CompleteTask,
    CreateTask,
    ListTasks,
    ReadMessages,
    SearchTasks,
    SendTeamMessage,
    UpdateTask,
)

MEMBERS = [("dev", "writes code"), ("qa", "tests it")]


async def open_team(path: Path, extra: int = 0) -> tuple[System, object]:
    system = await System.open(path)
    quiet = ScriptedModel(lambda request: reply("noted"))
    for key in ["lead", "dev", "qa", *(f"m{i}" for i in range(extra))]:
        await system.register_agent(AgentConfig(key=key), quiet)
    members = MEMBERS + [(f"m{i}", "helper") for i in range(extra)]
    team = await system.create_team("alpha", name="Alpha", lead="lead", members=members)
    return system, team


async def test_fifty_concurrent_claimers_and_exactly_one_winner(tmp_path: Path) -> None:
    system, team = await open_team(tmp_path / "log.db", extra=48)
    async with system:
        task = await team.ask(CreateTask(by="lead", subject="the one task"))  # type: ignore[attr-defined]
        claimers = ["dev", "qa", *(f"m{i}" for i in range(48))]
        results = await asyncio.gather(
            *(team.ask(ClaimTask(by=c, task_id=task.task_id)) for c in claimers),  # type: ignore[attr-defined]
            return_exceptions=True,
        )
        winners = [
            c for c, r in zip(claimers, results, strict=True) if not isinstance(r, BaseException)
        ]
        losers = [r for r in results if isinstance(r, BaseException)]
        assert len(winners) == 1 and len(losers) == 49
        assert all(
            isinstance(e, Rejected) and f"already claimed by {winners[0]}" in str(e) for e in losers
        )
        claimed = [
            e for e in await system.store.read_stream("team/alpha") if e.type == "team.task_claimed"
        ]
        assert len(claimed) == 1


async def test_dependency_chains_unblock_in_order(tmp_path: Path) -> None:
    system, team = await open_team(tmp_path / "log.db")
    async with system:
        ask = team.ask  # type: ignore[attr-defined]
        a = await ask(CreateTask(by="lead", subject="design"))
        b = await ask(CreateTask(by="lead", subject="build", blocked_by=[a.task_id]))
        c = await ask(CreateTask(by="lead", subject="ship", blocked_by=[a.task_id, b.task_id]))
        assert [a.status, b.status, c.status] == ["pending", "blocked", "blocked"]
        with pytest.raises(Rejected, match=f"blocked by unfinished task\\(s\\): {a.task_id}"):
            await ask(ClaimTask(by="dev", task_id=b.task_id))
        await ask(ClaimTask(by="dev", task_id=a.task_id))
        await ask(CompleteTask(by="dev", task_id=a.task_id, result="spec"))
        statuses = {t.task_id: t.status for t in await ask(ListTasks(by="lead", filter="all"))}
        assert statuses == {a.task_id: "completed", b.task_id: "pending", c.task_id: "blocked"}
        await ask(ClaimTask(by="qa", task_id=b.task_id))
        await ask(CompleteTask(by="qa", task_id=b.task_id, result="built"))
        unblocked = [
            e.event.task_id
            for e in await system.store.read_stream("team/alpha")  # type: ignore[union-attr]
            if e.type == "team.task_unblocked"
        ]
        assert unblocked == [b.task_id, c.task_id]


async def test_bad_requests_are_refused_with_reasons_and_recorded(tmp_path: Path) -> None:
    system, team = await open_team(tmp_path / "log.db")
    async with system:
        ask = team.ask  # type: ignore[attr-defined]
        a = await ask(CreateTask(by="lead", subject="a"))
        b = await ask(CreateTask(by="lead", subject="b", blocked_by=[a.task_id]))
        cases = [
            (
                UpdateTask(by="lead", task_id=a.task_id, blocked_by=[b.task_id]),
                "would create a cycle",
            ),
            (CreateTask(by="lead", subject="c", blocked_by=["t99-nope"]), "unknown task id"),
            (ClaimTask(by="dev", task_id="t42-zzz"), "unknown task id 't42-zzz'"),
            (CompleteTask(by="dev", task_id=a.task_id, result="x"), "claim it before completing"),
            (SendTeamMessage(by="dev", to="stranger", text="hi"), "'stranger' is not a member"),
            (CreateTask(by="outsider", subject="x"), "'outsider' is not a member"),
            (CreateTask(by="lead", subject="   "), "needs a subject"),
        ]
        for request, reason in cases:
            with pytest.raises(Rejected, match=reason):
                await ask(request)
        await ask(ClaimTask(by="dev", task_id=a.task_id))
        await ask(CompleteTask(by="dev", task_id=a.task_id, result="done"))
        with pytest.raises(Rejected, match="already completed by dev"):
            await ask(ClaimTask(by="qa", task_id=a.task_id))
        refused = [
            e.event
            for e in await system.store.read_stream("team/alpha")
            if e.type == "team.request_refused"
        ]
        assert len(refused) == len(cases) + 1


async def test_mailbox_send_broadcast_and_read_unread_once(tmp_path: Path) -> None:
    system, team = await open_team(tmp_path / "log.db")
    async with system:
        ask = team.ask  # type: ignore[attr-defined]
        await ask(SendTeamMessage(by="lead", to="dev", text="start with the parser"))
        await ask(Broadcast(by="qa", text="tests are red"))
        dev_mail = await ask(ReadMessages(by="dev"))
        assert [(m.sender, m.text) for m in dev_mail] == [
            ("lead", "start with the parser"),
            ("qa", "tests are red"),
        ]
        assert await ask(ReadMessages(by="dev")) == []
        assert [m.text for m in await ask(ReadMessages(by="lead"))] == ["tests are red"]
        assert await ask(ReadMessages(by="qa")) == []


async def test_search_ranks_subject_matches_first(tmp_path: Path) -> None:
    system, team = await open_team(tmp_path / "log.db")
    async with system:
        ask = team.ask  # type: ignore[attr-defined]
        await ask(CreateTask(by="lead", subject="write docs", description="mention the parser"))
        parser = await ask(CreateTask(by="lead", subject="parser rewrite", description="speed"))
        await ask(CreateTask(by="lead", subject="release", description="tag it"))
        found = await ask(SearchTasks(by="dev", query="parser"))
        assert found[0].task_id == parser.task_id and len(found) == 2


async def test_restart_in_the_middle_keeps_the_board_intact(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    system, team = await open_team(path)
    ask = team.ask  # type: ignore[attr-defined]
    a = await ask(CreateTask(by="lead", subject="a", priority=1))
    b = await ask(CreateTask(by="lead", subject="b", priority=5, blocked_by=[a.task_id]))
    await ask(ClaimTask(by="dev", task_id=a.task_id))
    await ask(SendTeamMessage(by="dev", to="lead", text="on it"))
    before = await system.team_board("alpha")
    await system.close()
    system, team = await open_team(path)
    async with system:
        after = await system.team_board("alpha")
        assert after == before
        assert [t.subject for t in await team.ask(ListTasks(by="lead"))] == ["b", "a"]  # type: ignore[attr-defined]
        await team.ask(CompleteTask(by="dev", task_id=a.task_id, result="ok"))  # type: ignore[attr-defined]
        assert (await system.team_board("alpha")).tasks[1].status == "pending"
        assert [m.text for m in await team.ask(ReadMessages(by="lead"))] == ["on it"]  # type: ignore[attr-defined]
        assert b.task_id
