"""The day's ledger is read from the log once per System, and nobody sees it half read:
a caller arriving during the read waits for it; a read that failed is read again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.agents.budgets import BudgetLimits, Budgets
from clawlog.actors.agents.metering import USAGE_LEDGER
from clawlog.actors.agents.usage_ledger import LogReader, UsageLedger, utc_day
from clawlog.actors.providers import ModelReply, ScriptedModel, Usage
from clawlog.events import RecordedEvent

AGENT = "main"
SPENT = 1234
BUDGETS = Budgets(agent_daily=BudgetLimits(max_tokens=1_000_000))


class HeldReader:
    """The System's store, whose day read (``read_all`` by event types) waits until the
    test releases it, or fails once."""

    def __init__(self, store: LogReader, *, fail: bool = False) -> None:
        self._store = store
        self._fail = fail
        self.reading = asyncio.Event()
        self.release = asyncio.Event()

    async def head_position(self) -> int:
        return await self._store.head_position()

    async def read_all(
        self,
        from_position: int = 1,
        limit: int = 1000,
        *,
        stream_prefix: str | None = None,
        types: Sequence[str] | None = None,
    ) -> list[RecordedEvent]:
        if types is not None:  # the day's read (not the search for its first position)
            self.reading.set()
            if self._fail:
                raise OSError("the disk went away")
            await self.release.wait()
        return await self._store.read_all(
            from_position, limit, stream_prefix=stream_prefix, types=types
        )

    async def read_stream(
        self, stream: str, from_version: int = 1, limit: int | None = None
    ) -> list[RecordedEvent]:
        return await self._store.read_stream(stream, from_version, limit)


async def record_spending(path: Path) -> None:
    """One reply of :data:`SPENT` tokens today, recorded by an earlier System."""
    async with System.open(path) as system:
        model = ScriptedModel([ModelReply(text="done", usage=Usage(input_tokens=SPENT))])
        await system.register_agent(AgentConfig(key=AGENT, max_tokens=100), model)
        assert await system.send(AGENT, "u", "hello") == "done"


def ledger_of(system: System) -> UsageLedger:
    ledger = system.runtime.services[USAGE_LEDGER]
    assert isinstance(ledger, UsageLedger)
    return ledger


async def test_a_caller_arriving_during_the_days_read_waits_for_it(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    await record_spending(path)
    async with System.open(path, budgets=BUDGETS) as system:
        ledger, now = ledger_of(system), time.time()
        held = HeldReader(system.store)
        first = asyncio.create_task(ledger.load(held, now))
        await held.reading.wait()

        async def second_caller() -> int:
            await ledger.load(system.store, now)
            return ledger.spent("agent", AGENT, utc_day(now)).tokens

        second = asyncio.create_task(second_caller())
        # Released only after the second caller's first step has run (call_soon keeps
        # the order): a caller returning at once would see the day half read.
        asyncio.get_running_loop().call_soon(held.release.set)
        assert await second == SPENT
        await first
        assert ledger.loaded


async def test_a_failed_read_is_read_again_by_the_next_caller(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    await record_spending(path)
    async with System.open(path, budgets=BUDGETS) as system:
        ledger, now = ledger_of(system), time.time()
        with pytest.raises(OSError, match="disk went away"):
            await ledger.load(HeldReader(system.store, fail=True), now)
        assert not ledger.loaded
        # The real path: the next registration with a daily budget reads the day again.
        await system.register_agent(AgentConfig(key=AGENT), ScriptedModel([]))
        assert ledger.loaded
        assert ledger.spent("agent", AGENT, utc_day(now)).tokens == SPENT


async def test_a_waiter_reads_the_day_itself_when_the_read_it_waited_on_fails(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.db"
    await record_spending(path)
    async with System.open(path, budgets=BUDGETS) as system:
        ledger, now = ledger_of(system), time.time()
        held = HeldReader(system.store, fail=True)
        held.release.set()
        failing = asyncio.create_task(ledger.load(held, now))
        waiting = asyncio.create_task(ledger.load(system.store, now))
        with pytest.raises(OSError, match="disk went away"):
            await failing
        await waiting
        assert ledger.loaded
        assert ledger.spent("agent", AGENT, utc_day(now)).tokens == SPENT
