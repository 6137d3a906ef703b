"""AgentWorkspaces.workspace_path(agent, user) is where the agent's tools put that user's
files: checked against where write_file really writes them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from clawlog.actors import ActorDead, System, SystemClosed
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, reply
from clawlog.actors.workspace import AgentWorkspaces
from clawlog.tools.workspace import WorkspaceConfig

USER = "telegram:42"


def writer(request: ModelRequest) -> ModelReply:
    """Writes notes.md with the user's message, then answers "done"."""
    if request.messages[-1].role == "tool":
        return reply("done")
    return call("write_file", path="notes.md", content=request.messages[-1].content)


@contextlib.asynccontextmanager
async def opened(tmp_path: Path, **options: Any) -> AsyncIterator[tuple[System, AgentWorkspaces]]:
    async with (
        System.open(tmp_path / "log.db") as system,
        await AgentWorkspaces.open(system, tmp_path / "ws", **options) as workspaces,
    ):
        yield system, workspaces


async def test_the_path_is_where_write_file_puts_each_users_files(tmp_path: Path) -> None:
    async with opened(tmp_path) as (system, workspaces):
        await workspaces.register_agent(AgentConfig(key="main"), ScriptedModel(writer))
        own = tmp_path / "elsewhere"
        await workspaces.register_agent(
            AgentConfig(key="side", workspace=str(own)), ScriptedModel(writer)
        )
        expected = workspaces.workspace_path("main", USER)
        assert not expected.exists()  # asking creates nothing
        assert await system.send("main", "s1", "from 42", user=USER) == "done"
        assert await system.send("main", "s2", "from nobody") == "done"
        assert await system.send("side", "s1", "on the side", user="bob") == "done"
        assert (expected / "notes.md").read_text() == "from 42"
        assert (workspaces.workspace_path("main") / "notes.md").read_text() == "from nobody"
        side = workspaces.workspace_path("side", "bob")
        assert side.is_relative_to(own)
        assert (side / "notes.md").read_text() == "on the side"
    written = sorted(p.resolve() for p in tmp_path.rglob("notes.md"))
    landed = [expected, workspaces.workspace_path("main"), side]
    assert written == sorted((path / "notes.md").resolve() for path in landed)


async def test_without_per_user_workspaces_every_user_shares_the_agents(tmp_path: Path) -> None:
    async with opened(tmp_path, workspace=WorkspaceConfig(per_user=False)) as (system, workspaces):
        await workspaces.register_agent(AgentConfig(key="main"), ScriptedModel(writer))
        assert workspaces.workspace_path("main", USER) == tmp_path.resolve() / "ws" / "main"
        assert await system.send("main", "s1", "shared", user=USER) == "done"
        assert (workspaces.workspace_path("main", "bob") / "notes.md").read_text() == "shared"


async def test_bad_arguments_are_refused_naming_them(tmp_path: Path) -> None:
    async with opened(tmp_path) as (system, workspaces):
        await system.register_agent(AgentConfig(key="bare"), ScriptedModel(writer))
        with pytest.raises(ValueError, match="invalid agent key"):
            workspaces.workspace_path("Not A Key", USER)
        with pytest.raises(TypeError, match="user must be a str"):
            workspaces.workspace_path("bare", 42)  # type: ignore[arg-type]
        with pytest.raises(ActorDead, match="unknown agent 'ghost'"):
            workspaces.workspace_path("ghost", USER)
        with pytest.raises(ValueError, match="agent 'bare' has no workspace"):
            workspaces.workspace_path("bare", USER)
        with pytest.raises(TypeError, match=r"config: must be a clawlog\.AgentConfig"):
            await workspaces.register_agent({"key": "x"}, ScriptedModel(writer))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="exec_config: must be ExecConfig or None"):
            await AgentWorkspaces.open(system, tmp_path / "ws2", exec_config={})
    with pytest.raises(SystemClosed):
        await AgentWorkspaces.open(system, tmp_path / "ws3")
