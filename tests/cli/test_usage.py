"""``clawlog usage``: totals per agent, session, model or day, as the log records them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from clawlog.events import ANY, open_store
from clawlog.events.domain.session import ModelReplied, SessionStarted, Usage

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
