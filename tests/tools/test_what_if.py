"""Policy what-if: a log recorded by a real System, decided again under other policies.

Tightening the policy refuses known allowed calls, loosening it allows known refusals,
asking more reports the calls that would wait for a person; what the log cannot decide
again (calls recorded before verdicts, redacted commands, rate limits, calls never
decided) is counted as such, never guessed.
"""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from clawlog.events import ANY, EventStore, open_store
from clawlog.events.domain.tool import (
    ApprovalOutcome,
    ToolCallRequested,
    ToolCallResumeDecided,
    ToolCallStarted,
)
from clawlog.tools import (
    ApprovalConfig,
    PolicyConfig,
    RateLimitConfig,
    ToolContext,
    ToolPipeline,
    ToolRegistry,
)
from clawlog.tools.decisions import ApprovalRequest
from clawlog.tools.driver import StoreSink, run_tool_call
from clawlog.tools.policy_file import PolicyFile, parse_policy
from clawlog.tools.ratelimit import RateLimiter, Window
from clawlog.tools.what_if import PolicyWhatIf, WhatIfReport, what_if

from .support import CountingTool, ShellTool
from .what_if_log import CALLS, RECORDED_POLICY, record_log, requested_at


@pytest.fixture(scope="module")
def recorded_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("what-if") / "log.db"
    asyncio.run(record_log(path))  # once for the module: the tests only read it
    return path


@pytest.fixture
async def recorded(recorded_log: Path) -> AsyncIterator[EventStore]:
    store = await open_store(recorded_log)
    yield store
    await store.close()


def policy(text: str) -> PolicyFile:
    return parse_policy(tomllib.loads(text), "test.toml")


def changed(report: WhatIfReport) -> dict[str, tuple[str, str, str]]:
    """session key -> (change, new step, new rule)"""
    return {c.session_key: (c.change, c.now_step, c.now_rule) for c in report.changes}


async def test_the_recorded_policy_changes_nothing(recorded: EventStore) -> None:
    report = await what_if(recorded, policy(RECORDED_POLICY))
    assert report.changes == []
    assert report.totals.examined == len(CALLS)
    assert report.totals.unchanged == len(CALLS)


async def test_tightening_the_policy_refuses_known_calls(recorded: EventStore) -> None:
    stricter = policy(
        RECORDED_POLICY.replace('deny = ["time"]', 'deny = ["time", "echo"]')
        + '[approvals]\nsecurity = "allowlist"\nask = "off"\n'
    )
    report = await what_if(recorded, stricter)
    assert changed(report) == {
        "s-echo": ("newly_refused", "policy", "agent_deny: agents.main.deny has 'echo'"),
        "s-ls": ("newly_refused", "approval", "security=allowlist, ask=off"),
        "s-ok": ("newly_refused", "approval", "security=allowlist, ask=off"),
    }
    by_session = {c.session_key: c for c in report.changes}
    assert (by_session["s-ok"].was, by_session["s-ok"].was_rule) == (
        "allowed",
        "allow-once by ops",
    )
    assert by_session["s-echo"].was_rule == "no policy step removed it"
    totals = report.totals
    assert (totals.examined, totals.unchanged, totals.newly_refused) == (8, 5, 3)
    assert totals.newly_allowed == totals.not_redecidable == 0


async def test_loosening_the_policy_allows_known_refusals(recorded: EventStore) -> None:
    looser = policy('[approvals]\nask = "off"\n')  # main's own deny list is gone too
    report = await what_if(recorded, looser)
    assert changed(report) == {
        "s-time": ("newly_allowed", "policy", "no policy step removed it"),
        "s-no": ("newly_allowed", "approval", "ask=off"),
    }
    by_session = {c.session_key: c for c in report.changes}
    assert (by_session["s-time"].was_step, by_session["s-time"].was_rule) == (
        "policy",
        "agent_deny: agents.main.deny has 'time'",
    )
    assert by_session["s-no"].was_rule == "denied by ops"
    # The deny pattern, the invalid arguments and the unknown tool refuse whatever the policy.
    assert report.totals.unchanged == 6 and report.totals.newly_allowed == 2


async def test_asking_more_reports_the_calls_that_would_wait(recorded: EventStore) -> None:
    report = await what_if(recorded, policy(RECORDED_POLICY + '[approvals]\nask = "always"\n'))
    # The approved deploy was asked then too: its recorded answer stands.
    assert changed(report) == {
        "s-echo": ("newly_asks", "approval", "ask=always"),
        "s-ls": ("newly_asks", "approval", "ask=always"),
    }
    assert report.totals.newly_asks == 2


@pytest.fixture(scope="module")
def two_agents_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("what-if-two") / "log.db"
    asyncio.run(record_log(path, other_agent=True))
    return path


async def test_calls_are_chosen_by_agent_tool_and_time(two_agents_log: Path) -> None:
    """Under deny-all every allowed call changes: each filter must choose exactly the
    calls it names (main's eight, other's two; shell calls of both; a span of time or of
    positions), no more, no fewer."""
    tightest = policy('[tools]\ndeny = ["*"]\n')

    async def chosen(**filters: Any) -> tuple[int, set[str]]:
        report = await what_if(store, tightest, **filters)
        assert report.totals.not_redecidable == 0
        return report.totals.examined, {c.session_key for c in report.changes}

    async with await open_store(two_agents_log) as store:
        at = await requested_at(store)
        assert await chosen() == (10, {"s-echo", "s-ls", "s-ok", "o-echo", "o-ls"})
        assert await chosen(agent="main") == (8, {"s-echo", "s-ls", "s-ok"})
        assert await chosen(agent="other") == (2, {"o-echo", "o-ls"})
        assert await chosen(tool="shell") == (3, {"s-ls", "o-ls"})  # s-rm stays refused
        assert await chosen(agent="main", tool="deploy") == (3, {"s-ok"})
        assert await chosen(agent="someone-else") == (0, set())
        # The middle of the log, by time: requested from s-ls's request, before s-ok's.
        middle = {"since_time": at["s-ls"][1], "until_time": at["s-ok"][1]}
        assert await chosen(**middle) == (2, {"s-ls"})  # s-ls and s-rm
        assert await chosen(since_time=at["s-ls"][1], until_time=at["s-ls"][1]) == (0, set())
        # The same by position, and from a position on.
        assert await chosen(start=at["s-ls"][0], until=at["s-ok"][0]) == (2, {"s-ls"})
        assert await chosen(start=at["s-ok"][0]) == (6, {"s-ok", "o-echo", "o-ls"})
        assert await chosen(since_time=2**40) == (0, set())
        # s-ok is decided (a person's answer, then its start) after its request: a span
        # ending just after the request still reads its outcome.
        just_after_ok = {"until": at["s-ok"][0] + 1, "until_time": at["s-ok"][1] + 1e-6}
        for bound, value in just_after_ok.items():
            assert await chosen(start=at["s-ok"][0], **{bound: value}) == (1, {"s-ok"}), bound


async def test_the_streamed_run_yields_each_change_once_with_final_totals(
    recorded: EventStore,
) -> None:
    run = PolicyWhatIf(policy('[tools]\ndeny = ["*"]\n'))
    seen = [c.call_id async for c in run.changes(recorded)]
    assert sorted(seen) == ["call-s-echo", "call-s-ls", "call-s-ok"]
    assert run.totals.examined == len(CALLS)


# -- what the log cannot decide again ---------------------------------------------------
CTX = ToolContext(agent="main", session_key="s")


async def test_calls_recorded_before_verdicts_are_not_redecidable(tmp_path: Path) -> None:
    async with await open_store(tmp_path / "old.db") as store:
        who = {"call_id": "c1", "tool": "echo", "agent": "main", "session_key": "s"}
        await store.append(
            "session/main/s", [ToolCallRequested(**who), ToolCallStarted(**who)], ANY
        )
        report = await what_if(store, policy('[tools]\ndeny = ["echo"]\n'))
    assert report.changes == []
    assert report.totals.not_redecidable == 1
    assert report.totals.not_redecidable_why == {
        "recorded before verdicts (no call facts in the log)": 1
    }


async def test_a_redacted_command_a_rate_limit_and_an_undecided_call_are_counted(
    tmp_path: Path,
) -> None:
    async with await open_store(tmp_path / "log.db") as store:
        sink = StoreSink(store, "session/main/s")
        limited = ToolPipeline(
            ToolRegistry([ShellTool()]),
            rate_limiter=RateLimiter(RateLimitConfig(session=(Window(1, 60.0),))),
        )
        secret = "curl -H 'Authorization: Bearer sk-abcdefghijklmnopqrstuvwxyz0123456789'"
        for call_id, command in (("c1", secret), ("c2", "ls")):
            await run_tool_call(limited, CTX, "exec", {"command": command}, sink, call_id=call_id)
        # A call requested and never decided (the process stopped first).
        await store.append(
            "session/main/s",
            [ToolCallRequested(call_id="c3", tool="exec", agent="main", session_key="s")],
            ANY,
        )
        refusals = await store.read_all(1, 100, types=["tool.call_refused"])
        assert [r.event.step for r in refusals] == ["rate_limit"]  # type: ignore[union-attr]
        report = await what_if(store, policy('[approvals]\nsecurity = "allowlist"\n'))
    assert report.totals.not_redecidable == 3
    assert report.totals.not_redecidable_why == {
        "its command's arguments are redacted in the log": 1,
        "refused by rate_limit (live counters, not policy)": 1,
        "never decided (awaiting approval or interrupted)": 1,
    }


async def test_a_rate_limited_call_the_new_policy_refuses_is_unchanged(tmp_path: Path) -> None:
    async with await open_store(tmp_path / "log.db") as store:
        sink = StoreSink(store, "session/main/s")
        limited = ToolPipeline(
            ToolRegistry([ShellTool()]),
            rate_limiter=RateLimiter(RateLimitConfig(session=(Window(1, 60.0),))),
        )
        for call_id in ("c1", "c2"):
            await run_tool_call(limited, CTX, "exec", {"command": "ls"}, sink, call_id=call_id)
        report = await what_if(store, policy('[tools]\ndeny = ["exec"]\n'))
    assert [c.call_id for c in report.changes] == ["c1"]
    assert report.totals.unchanged == 1 and report.totals.not_redecidable == 0


async def test_a_call_run_again_after_a_restart_is_examined_once(tmp_path: Path) -> None:
    async with await open_store(tmp_path / "log.db") as store:
        sink = StoreSink(store, "session/main/s")
        pipeline = ToolPipeline(ToolRegistry([ShellTool()]))
        await run_tool_call(pipeline, CTX, "exec", {"command": "ls"}, sink, call_id="c1")
        resumed = ToolCallResumeDecided(call_id="c1", tool="exec", decision="rerun")
        await sink.record([resumed])
        await run_tool_call(pipeline, CTX, "exec", {"command": "ls"}, sink, call_id="c1")
        report = await what_if(store, policy('[tools]\ndeny = ["exec"]\n'))
    assert report.totals.examined == 1 and report.totals.newly_refused == 1


async def test_a_policy_config_and_approvals_work_without_a_file(recorded: EventStore) -> None:
    report = await what_if(recorded, PolicyConfig(), ApprovalConfig(ask="off"))
    assert "s-no" in changed(report)


async def test_an_allow_always_answer_counts_from_the_next_call_on(tmp_path: Path) -> None:
    async def allow_always(request: ApprovalRequest) -> ApprovalOutcome:
        return "allow-always"

    deploy = CountingTool("deploy", requires_approval=True)
    async with await open_store(tmp_path / "log.db") as store:
        sink = StoreSink(store, "session/main/s")
        pipeline = ToolPipeline(ToolRegistry([deploy]))
        for call_id in ("c1", "c2"):
            await run_tool_call(pipeline, CTX, "deploy", {}, sink, allow_always, call_id=call_id)
        started = await store.read_all(1, 100, types=["tool.call_started"])
        rules = [s.event.rule for s in started]  # type: ignore[union-attr]
        assert rules == ["allow-always by approver", "allowlist '*'"]
        report = await what_if(store, policy('[approvals]\nsecurity = "allowlist"\nask = "off"\n'))
    # Without a person to ask, the first call is refused; the second was run by the entry
    # the first one's answer added, as it is still.
    assert changed(report) == {"s": ("newly_refused", "approval", "security=allowlist, ask=off")}
    assert [c.call_id for c in report.changes] == ["c1"]
    assert report.totals.unchanged == 1
