"""``tools/custom`` as of a log position (``stream_state_as_of``, ``clawlog replay --as-of N
--stream tools/custom``): the custom tools in force then, as ``clawlog tools --json``
shows them, env names only."""

from __future__ import annotations

import json
from pathlib import Path

from clawlog import System
from clawlog.actors.replay import stream_state_as_of
from clawlog.events import open_store
from tests.cli.support import clawlog

from .support import string_schema

SECRET = "as-of-value-never-shown-9c1d"


async def _positions(path: Path) -> dict[str, int]:
    """A log where ``a`` is defined, ``b`` defined, ``a`` redefined, then ``b`` removed;
    the position of each of those events."""
    async with System.open(path) as system:
        first = await system.define_tool("a", command="echo v1")
        b = await system.define_tool(
            "b", command="echo {{.x}}", parameters=string_schema("x"), env={"B_TOKEN": SECRET}
        )
        second = await system.define_tool("a", command="echo v2", agent=None)
        await system.remove_tool("b")
        removed = (await system.store.read_stream("tools/custom"))[-1].position
    return {"a1": first.position, "b": b.position, "a2": second.position, "removed": removed}


async def test_the_state_as_of_each_position_is_the_tools_then_in_force(
    tmp_path: Path, secret_key: str
) -> None:
    path = tmp_path / "log.db"
    at = await _positions(path)
    async with await open_store(path) as store:
        found = {
            name: await stream_state_as_of(store, "tools/custom", position=position)
            for name, position in at.items()
        }
    shown = {
        name: [(t["name"], t["command"], t["env"]) for t in as_of.state.tools]
        for name, as_of in found.items()
    }
    assert shown == {
        "a1": [("a", "echo v1", [])],
        "b": [("a", "echo v1", []), ("b", "echo {{.x}}", ["B_TOKEN"])],
        "a2": [("a", "echo v2", []), ("b", "echo {{.x}}", ["B_TOKEN"])],
        "removed": [("a", "echo v2", [])],
    }
    assert found["removed"].events == 4


async def test_replay_as_of_shows_the_custom_tools_without_env_values(
    tmp_path: Path, secret_key: str
) -> None:
    path = tmp_path / "log.db"
    at = await _positions(path)
    done = clawlog(
        "replay", "--db", str(path), "--json", "--as-of", str(at["b"]), "--stream", "tools/custom"
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert [(t["name"], t["env"]) for t in document["state"]["tools"]] == [
        ("a", []),
        ("b", ["B_TOKEN"]),
    ]
    assert "definition" not in document["state"]["tools"][1]
    text = clawlog("replay", "--db", str(path), "--as-of", str(at["b"]), "--stream", "tools/custom")
    assert text.returncode == 0, text.stderr
    assert "B_TOKEN" in text.stdout
    assert SECRET not in done.stdout + text.stdout
