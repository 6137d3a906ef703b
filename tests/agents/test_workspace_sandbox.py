"""An agent's exec in the Docker sandbox, through the System (actors.workspace), against
a real engine: one container per session, the workspace mounted, no network, and the
container gone when the session ends or the workspaces close."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ScriptedModel, call
from clawlog.tools.sandbox import SandboxConfig
from clawlog.tools.sandbox.manager import LABEL_KEY
from clawlog.tools.workspace.access import user_directory
from tests.agents.test_workspace_tools import (
    USER,
    completed,
    failed,
    opened,
    script,
    wait_for,
)
from tests.sandbox.conftest import docker_host  # noqa: F401  (the engine fixture)

pytestmark = pytest.mark.docker


@pytest.fixture
def engine(docker_host: str) -> Iterator[Any]:  # noqa: F811
    client = docker.DockerClient(base_url=docker_host, timeout=60)
    yield client
    client.close()


def containers(engine: Any) -> list[Any]:
    return list(engine.containers.list(all=True, filters={"label": LABEL_KEY}))


async def test_exec_runs_in_the_sessions_container_which_is_removed_at_close(
    tmp_path: Path,
    docker_host: str,  # noqa: F811
    engine: Any,
) -> None:
    model = ScriptedModel(
        script(
            call("exec", command="echo from-sandbox > made.txt && pwd && cat /proc/1/cmdline"),
            call("exec", command="ls /sys/class/net"),
        )
    )
    sandbox = SandboxConfig(docker_host=docker_host, workspace_access="rw")
    before = {c.id for c in containers(engine)}
    async with opened(tmp_path, sandbox=sandbox) as (system, workspaces):
        await workspaces.register_agent(AgentConfig(key="main"), model)
        await system.send("main", "s1", "run it", user=USER)
        events = await system.store.read_stream("session/main/s1")
        mine = [c for c in containers(engine) if c.id not in before]
        assert len(mine) == 1  # both calls ran in the one container of the session
        await workspaces.aclose()  # what the application does before the system closes
        removed = await system.store.read_stream("sandbox/main/s1")
    outputs = completed(events)
    assert outputs[0].startswith("/workspace\n") and outputs[0].endswith("[exit code 0]")
    assert outputs[1] == "lo\n[exit code 0]"  # network none
    user_root = tmp_path / "ws" / "main" / "users" / user_directory(USER)
    assert (user_root / "made.txt").read_text() == "from-sandbox\n"
    assert [e.type for e in removed] == [
        "sandbox.container_started",
        "sandbox.container_removed",
    ]
    assert {c.id for c in containers(engine)} <= before


async def test_a_read_only_session_container_is_removed_when_the_session_ends(
    tmp_path: Path,
    docker_host: str,  # noqa: F811
    engine: Any,
) -> None:
    model = ScriptedModel(
        script(
            call("exec", command="touch x 2>&1; echo $?; env"),
            call("write_file", path="y.txt", content="no"),
        )
    )
    sandbox = SandboxConfig(docker_host=docker_host, workspace_access="ro")
    config = AgentConfig(key="main", idle_timeout_s=0.2)
    async with opened(tmp_path, sandbox=sandbox) as (system, workspaces):
        await workspaces.register_agent(config, model)
        await system.send("main", "s1", "try it", user=USER)
        removed = await wait_for(system, "sandbox/main/s1", "sandbox.container_removed")
        events = await system.store.read_stream("session/main/s1")
        assert removed.reason == "session_end"
        assert engine.containers.list(all=True, filters={"id": removed.container_id}) == []
    outputs = completed(events)
    assert outputs[0].startswith("touch: x: Read-only file system\n1\n")  # ro mount
    assert "DOCKER_HOST" not in outputs[0] and "HOME=" in outputs[0]  # no host environment
    assert "the workspace is mounted read-only" in failed(events)[0]  # seed 002 §8: no write
