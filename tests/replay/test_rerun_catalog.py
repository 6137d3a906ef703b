"""Re-running a session whose agent has a cost budget on a model only the application's
catalog prices: ``rerun(model_catalog=...)`` and ``clawlog replay --rerun
--model-catalog FILE`` pass the catalog to the re-run's System."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from clawlog.actors import System
from clawlog.actors.agents.budgets import BudgetLimits, Budgets
from clawlog.actors.errors import ReplayError
from clawlog.actors.providers import ScriptedModel, reply
from clawlog.actors.replay import rerun
from clawlog.events import open_store
from tests.agents.compaction_support import (
    AGENT,
    SESSION_KEY,
    STREAM,
    fetch_tool,
    fitted_config,
    researcher,
)
from tests.agents.usage_summarizer import CATALOG

ROOT = Path(__file__).parents[2]
BUDGETS = Budgets(session=BudgetLimits(max_cost_usd=1.0))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A long session of an agent with a cost budget on "researcher" (priced only in
    CATALOG); its summaries were refused by the budget (the summarizer is pricey)."""
    path = tmp_path_factory.mktemp("rerun_catalog") / "log.db"

    async def record() -> None:
        summarizer = ScriptedModel(lambda request: reply("never"), name="pricey")
        async with System.open(path, model_catalog=CATALOG) as system:
            config = await fitted_config(system, budgets=BUDGETS)
            model = ScriptedModel(researcher, name="researcher")
            await system.register_agent(config, model, tools=[fetch_tool()], summarizer=summarizer)
            for number in range(10):
                await system.send(AGENT, SESSION_KEY, f"read page {number}")
            events = await system.store.read_stream(STREAM)
            assert any(e.type == "session.compaction_failed" for e in events)

    asyncio.run(record())
    return path


async def test_rerun_with_the_applications_catalog_matches(recorded: Path) -> None:
    async with await open_store(recorded) as store:
        with pytest.raises(ReplayError, match=r"no price for .*'researcher'.*model_catalog="):
            await rerun(store, AGENT, SESSION_KEY)
        report = await rerun(store, AGENT, SESSION_KEY, model_catalog=CATALOG)
    assert report.matched, report.divergence
    assert report.turns == 10 and report.compactions > 0  # the refusals were served again


def clawlog(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clawlog", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_cli_rerun_takes_the_catalog_from_a_json_file(recorded: Path, tmp_path: Path) -> None:
    catalog = tmp_path / "models.json"
    specs = [CATALOG.specs["researcher"], CATALOG.specs["pricey"]]
    catalog.write_text(json.dumps({"models": msgspec.to_builtins(specs)}))
    done = clawlog(
        "replay",
        "--db",
        str(recorded),
        "--json",
        "--rerun",
        AGENT,
        SESSION_KEY,
        "--model-catalog",
        str(catalog),
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["matched"] and printed["turns"] == 10
    # Without it: one line naming the missing price and the option.
    missing = clawlog("replay", "--db", str(recorded), "--rerun", AGENT, SESSION_KEY)
    assert missing.returncode == 2
    assert "no price for" in missing.stderr and "'researcher'" in missing.stderr
    assert "--model-catalog FILE" in missing.stderr


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("{not json", "malformed|JSON"),
        ('{"models": [{"name": "x"}]}', "context_window"),
        ('{"models": [], "aliases": {"a": "nowhere"}}', "alias 'a' names 'nowhere'"),
        ('{"modles": []}', "modles"),
    ],
)
def test_a_bad_catalog_file_is_refused_naming_what_is_wrong(
    recorded: Path, tmp_path: Path, content: str, named: str
) -> None:
    catalog = tmp_path / "models.json"
    catalog.write_text(content)
    done = clawlog(
        "replay",
        "--db",
        str(recorded),
        "--rerun",
        AGENT,
        SESSION_KEY,
        "--model-catalog",
        str(catalog),
    )
    assert done.returncode == 2
    assert "--model-catalog" in done.stderr and str(catalog) in done.stderr
    assert re.search(named, done.stderr), done.stderr
