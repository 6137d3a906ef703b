"""``clawlog audit`` and ``clawlog history`` show what a restart did with the tool calls
it found in flight: the idempotent call was run again with the same key (counted), the
external one was interrupted. The log comes from a real child process killed during both
calls (tests.agents.exactly_once_child), resumed in this process."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.agents.test_resume_exactly_once import kill_when_started, resume_here

from .support import clawlog


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("resumed")
    path = folder / "log.db"

    async def record() -> None:
        await kill_when_started("start", path, folder, {"transfer", "notify"})
        await kill_when_started("resume", path, folder, {"transfer"})  # re-run 1, killed
        await resume_here(path, folder)  # re-run 2 finishes the turn

    asyncio.run(record())
    return path


def test_the_audit_counts_reruns_and_names_the_resume_decision(log: Path) -> None:
    done = clawlog("audit", "--db", str(log), "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["call_id"]: row for row in json.loads(done.stdout)}
    assert (rows["c1"]["reruns"], rows["c1"]["resume_decision"]) == (2, "rerun")
    assert rows["c1"]["outcome"] == "completed"
    assert (rows["c2"]["reruns"], rows["c2"]["resume_decision"]) == (0, "interrupted")
    assert rows["c2"]["outcome"] == "failed"
    table = clawlog("audit", "--db", str(log))
    assert table.returncode == 0, table.stderr
    assert "reruns" in table.stdout and "resume" in table.stdout


def test_history_has_a_line_per_resume_decision(log: Path) -> None:
    done = clawlog("history", "main", "s1", "--db", str(log))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if "tool.call_resume_decided" in line]
    assert len(lines) == 3, done.stdout  # c1 twice (two restarts), c2 once (the first)
    rerun = "after a restart: run again with the same key (idempotent side effects, re-run"
    assert sum(rerun in line for line in lines) == 2
    [interrupted] = [line for line in lines if "notify" in line]
    assert "after a restart: interrupted (external side effects)" in interrupted
