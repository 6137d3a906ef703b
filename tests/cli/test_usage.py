"""``clawlog usage``: totals per agent, session, model or day, as the log records them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from clawlog.events import ANY, open_store
from clawlog.events.domain.session import ModelReplied, SessionStarted, Usage
from clawlog.projections import ModelUsageReader, ProjectionRunner, ReadModels
from clawlog.projections.read_models.usage import ModelUsage

from .support import clawlog, run_in_a_terminal

#: (agent, session key, model, input, output, cached, cost).
REPLIES = [
    ("alpha", "s1", "gpt-4o", 1000, 100, 200, 0.0035),
    ("alpha", "s1", "gpt-4o", 2000, 50, 0, 0.0055),
    ("alpha", "s2", "claude-sonnet-4-5", 300, 30, 0, 0.00135),
    ("beta", "s1", "local", 10, 5, 0, None),
]


async def write(path: Path) -> None:
    async with await open_store(path) as store:
        for agent, key, model, given, said, cached, cost in REPLIES:
            stream = f"session/{agent}/{key}"
            if await store.stream_version(stream) == 0:
                await store.append(stream, [SessionStarted(agent=agent, session_key=key)], ANY)
            usage = Usage(input_tokens=given, output_tokens=said, cached_input_tokens=cached)
            reply = ModelReplied(turn_id="t", iteration=1, usage=usage, model=model, cost_usd=cost)
            await store.append(stream, [reply], ANY)


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("usage") / "log.db"
    asyncio.run(write(path))
    return str(path)


def rows(log: str, *args: str) -> Any:
    done = clawlog("usage", "--db", log, "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_totals_by_agent_sum_the_recorded_replies(log: str) -> None:
    assert rows(log) == [
        {
            "agent": "alpha",
            "calls": 3,
            "input_tokens": 3300,
            "cached_input_tokens": 200,
            "cache_write_tokens": 0,
            "output_tokens": 180,
            "reasoning_tokens": 0,
            "estimated_calls": 0,
            "cost_usd": pytest.approx(0.0035 + 0.0055 + 0.00135),
            "unpriced_calls": 0,
            "summary_calls": 0,
        },
        {
            "agent": "beta",
            "calls": 1,
            "input_tokens": 10,
            "cached_input_tokens": 0,
            "cache_write_tokens": 0,
            "output_tokens": 5,
            "reasoning_tokens": 0,
            "estimated_calls": 0,
            "cost_usd": 0.0,
            "unpriced_calls": 1,
            "summary_calls": 0,
        },
    ]


def test_filters_and_groupings(log: str) -> None:
    by_model = {r["model"]: r["calls"] for r in rows(log, "--by", "model")}
    assert by_model == {"claude-sonnet-4-5": 1, "gpt-4o": 2, "local": 1}
    alpha = [
        (r["session"], r["input_tokens"]) for r in rows(log, "--agent", "alpha", "--by", "session")
    ]
    assert alpha == [("session/alpha/s1", 3000), ("session/alpha/s2", 300)]
    s1 = [(r["agent"], r["calls"]) for r in rows(log, "--session", "s1")]
    assert s1 == [("alpha", 2), ("beta", 1)]
    [day] = rows(log, "--by", "day")
    assert day["calls"] == 4 and len(day["day"]) == 10
    assert rows(log, "--agent", "nobody") == []


def test_plain_output_is_one_tab_separated_line_per_group(log: str) -> None:
    done = clawlog("usage", "--db", log, "--by", "model")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split("\t")[:3] == ["model", "calls", "input"]
    assert [line.split("\t")[0] for line in lines[1:]] == ["claude-sonnet-4-5", "gpt-4o", "local"]
    assert lines[2].split("\t")[8] == "0.009000"  # the cost: six decimals


def test_a_terminal_shows_a_total_row(log: str) -> None:
    shown = run_in_a_terminal("usage", "--db", log)
    assert "model usage by agent" in shown
    [total] = [line for line in shown.splitlines() if "total" in line]
    cells = [cell.strip() for cell in total.split("│") if cell.strip()]
    assert cells[:3] == ["total", "4", "3310"] and "0.010350" in cells


def test_an_unknown_grouping_is_refused_naming_the_choices(log: str) -> None:
    done = clawlog("usage", "--db", log, "--by", "user")
    assert done.returncode == 2
    assert "agent" in done.stderr and "model" in done.stderr and "day" in done.stderr


class Recorded(NamedTuple):
    """A model reply as the log holds it."""

    position: int
    recorded_at: float
    agent: str
    input_tokens: int


async def recorded_replies(log: str) -> list[Recorded]:
    """Each model reply of the log, in log order."""
    async with await open_store(log) as store:
        events = await store.read_all(1, limit=1000)
    return [
        Recorded(e.position, e.recorded_at, e.stream.split("/")[1], e.event.usage.input_tokens)
        for e in events
        if isinstance(e.event, ModelReplied)
    ]


def summed(replies: list[Recorded]) -> dict[str, int]:
    """The input tokens of ``replies`` per agent."""
    totals: dict[str, int] = {}
    for reply in replies:
        totals[reply.agent] = totals.get(reply.agent, 0) + reply.input_tokens
    return totals


async def test_since_a_position_in_the_middle_counts_exactly_the_later_replies(log: str) -> None:
    replies = await recorded_replies(log)
    assert len(replies) == len(REPLIES)
    middle = replies[2].position  # the third reply: alpha's s2, then beta's
    later = {r["agent"]: r["input_tokens"] for r in rows(log, "--since", str(middle))}
    assert later == summed(replies[2:]) == {"alpha": 300, "beta": 10}
    # One position further leaves that reply out.
    assert {r["agent"]: r["calls"] for r in rows(log, "--since", str(middle + 1))} == {"beta": 1}
    assert rows(log, "--since", str(replies[-1].position + 1)) == []


async def test_since_a_time_in_the_middle_counts_exactly_the_later_replies(log: str) -> None:
    replies = await recorded_replies(log)
    # Each reply was its own append, one after the other: their times are increasing.
    times = [reply.recorded_at for reply in replies]
    assert times == sorted(times) and len(set(times)) == len(times)
    middle = times[1]
    later = rows(log, "--since", f"@{middle!r}", "--by", "session")
    assert [(r["session"], r["calls"]) for r in later] == [
        ("session/alpha/s1", 1),
        ("session/alpha/s2", 1),
        ("session/beta/s1", 1),
    ]


async def test_the_reader_filters_by_time_and_position_alike(log: str, tmp_path: Path) -> None:
    replies = await recorded_replies(log)
    async with (
        await open_store(log) as store,
        ProjectionRunner(store, tmp_path / "views.db", [ModelUsage()]) as runner,
    ):
        await runner.catch_up()
    async with ReadModels(tmp_path / "views.db") as models:
        reader = ModelUsageReader(models)
        for index, reply in enumerate(replies):
            expected = summed(replies[index:])
            by_time = await reader.totals(since=reply.recorded_at, limit=-1)
            by_position = await reader.totals(from_position=reply.position, limit=-1)
            assert {t.key: t.input_tokens for t in by_time} == expected
            assert {t.key: t.input_tokens for t in by_position} == expected
        assert await reader.totals(since=replies[-1].recorded_at + 1, limit=-1) == []
