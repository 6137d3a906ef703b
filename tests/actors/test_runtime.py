"""The runtime: hub, typed asks, piped I/O, lifecycle of the System and its threads."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from clawlog.actors import (
    ActorDead,
    AskTimeout,
    EventSourcedActor,
    Rejected,
    System,
    SystemClosed,
)
from clawlog.events import StoreLocked
from tests.actors.conftest import FAST
from tests.actors.sample import Add, Added, Cancel, Counter, Get, SlowIo


async def test_actor_handles_cancel_while_its_piped_io_is_pending(system: System) -> None:
    counter = await system.spawn(Counter, "counter/io")
    release = threading.Event()
    slow = asyncio.ensure_future(counter.ask(SlowIo(release=release), timeout=30))
    assert await counter.ask(Cancel(), timeout=5) == "cancel handled while I/O pending"
    assert await counter.ask(Add(amount=3), timeout=5) == 3
    assert not slow.done()
    release.set()
    assert await slow == "io done (cancelled=True)"


async def test_ask_times_out_with_a_clear_error(system: System) -> None:
    counter = await system.spawn(Counter, "counter/t")
    release = threading.Event()
    with pytest.raises(AskTimeout, match=r"counter/t did not answer SlowIo within 0\.05 s"):
        await counter.ask(SlowIo(release=release), timeout=0.05)
    release.set()
    assert await counter.ask(Get()) == 0


async def test_ask_does_not_block_the_callers_loop(system: System) -> None:
    counter = await system.spawn(Counter, "counter/nb")
    release = threading.Event()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while not release.is_set():
            ticks += 1
            await asyncio.sleep(0)
            if ticks == 50:
                release.set()

    pending = asyncio.ensure_future(counter.ask(SlowIo(release=release)))
    await ticker()
    assert await pending == "io done (cancelled=False)"
    assert ticks >= 50


async def test_rejected_command_is_returned_without_a_restart(system: System) -> None:
    counter = await system.spawn(Counter, "counter/r")
    with pytest.raises(Rejected, match="amount must be positive"):
        await counter.ask(Add(amount=-1))
    assert await counter.ask(Add(amount=1)) == 1
    types = [e.type for e in await system.store.read_stream("counter/r")]
    assert "actor.failed" not in types


async def test_unknown_actor_and_duplicate_spawn_are_clear_errors(system: System) -> None:
    with pytest.raises(ActorDead, match="no actor is running for 'counter/none'"):
        await system.ask("counter/none", Get())
    await system.spawn(Counter, "counter/dup")
    with pytest.raises(ValueError, match="already running for 'counter/dup'"):
        await system.spawn(Counter, "counter/dup")
    with pytest.raises(Exception, match="invalid stream name"):
        await system.spawn(Counter, "bad path")


async def test_close_with_appends_in_flight_loses_no_acknowledged_event(db_path: Path) -> None:
    system = await System.open(db_path, event_types=[Added], policy=FAST)
    counters = [await system.spawn(Counter, f"counter/{i}") for i in range(8)]
    acked: list[tuple[str, int]] = []
    enough = asyncio.Event()

    async def hammer(handle, n: int) -> None:  # type: ignore[no-untyped-def]
        for _k in range(n):
            try:
                total = await handle.ask(Add(amount=1))
            except (ActorDead, SystemClosed):
                return
            acked.append((handle.path, total))
            if len(acked) >= 300:
                enough.set()

    workers = [asyncio.ensure_future(hammer(c, 200)) for c in counters]
    await enough.wait()
    await system.close()
    await asyncio.gather(*workers)
    async with System.open(db_path, event_types=[Added]) as reopened:
        for handle in counters:
            events = await reopened.store.read_stream(handle.path)
            stored = sum(1 for e in events if e.type == "test.counter_added")
            best = max((t for p, t in acked if p == handle.path), default=0)
            assert stored >= best


async def test_a_thousand_actors_start_and_stop_and_no_thread_is_left(db_path: Path) -> None:
    before = {t.ident for t in threading.enumerate()}
    async with System.open(db_path, event_types=[Added], policy=FAST) as system:
        handles = await asyncio.gather(*(system.spawn(Counter, f"many/{i}") for i in range(1000)))
        assert all(h.is_alive() for h in handles)
        answers = await asyncio.gather(*(h.ask(Add(amount=i)) for i, h in enumerate(handles)))
        assert answers == list(range(1000))
    assert not any(h.is_alive() for h in handles)
    left = [t.name for t in threading.enumerate() if t.ident not in before]
    assert left == []


async def test_close_is_idempotent_and_refuses_later_use(db_path: Path) -> None:
    system = await System.open(db_path, event_types=[Added])
    counter = await system.spawn(Counter, "counter/c")
    await asyncio.gather(system.close(), system.close())
    await system.close()
    with pytest.raises(SystemClosed):
        await system.spawn(Counter, "counter/c2")
    with pytest.raises(ActorDead):
        await counter.ask(Get())


async def test_second_system_on_the_same_file_is_refused(db_path: Path) -> None:
    async with System.open(db_path, event_types=[Added]) as system:
        await system.spawn(Counter, "counter/one")
        with pytest.raises(StoreLocked, match="already open for writing"):
            await System.open(db_path, event_types=[Added])
        script = (
            "import asyncio, sys; sys.path.insert(0, '.');\n"
            "from clawlog.actors import System\n"
            "from clawlog.events import StoreLocked\n"
            "async def main():\n"
            f"    try: await System.open({str(db_path)!r})\n"
            "    except StoreLocked as e: print('refused:', e); return\n"
            "    print('opened')\n"
            "asyncio.run(main())\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=Path(__file__).parents[2],
        )
        assert result.stdout.startswith("refused:"), result.stdout + result.stderr
    async with System.open(db_path, event_types=[Added]) as again:  # released on close
        counter = await again.spawn(Counter, "counter/one")
        assert await counter.ask(Get()) == 0


class Stateless(EventSourcedActor[None]):
    kind = "stateless"


async def test_unknown_message_is_rejected_with_its_type(system: System) -> None:
    actor = await system.spawn(Stateless, "plain/a")
    with pytest.raises(Rejected, match="stateless does not understand Get"):
        await actor.ask(Get())
