"""The Docker sandbox against a real engine: no network, ro mounts refuse writes, the
memory limit kills, the host environment is invisible, one container per session reused
and gone after the session or the manager closes, timeouts kill the command's group."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import docker
import pytest

from clawlog.events import EventStore, open_store
from clawlog.tools import ToolContext
from clawlog.tools.errors import CommandTimedOut
from clawlog.tools.exec import ExecConfig, ExecTool, ProcessTool, exec_tools
from clawlog.tools.sandbox import SandboxConfig, SandboxManager

from ..exec.support import StoreRecorder

pytestmark = pytest.mark.docker


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "hello.txt").write_text("hello from the host\n")
    return root


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EventStore]:
    async with await open_store(tmp_path / "log.db") as opened:
        yield opened


@pytest.fixture
def engine(docker_host: str) -> Any:
    client = docker.DockerClient(base_url=docker_host, timeout=60)
    yield client
    client.close()


class Sandboxed:
    """exec and process over a sandbox manager with its own configuration."""

    def __init__(self, manager: SandboxManager, workspace: Path, recorder: StoreRecorder) -> None:
        self.manager = manager
        tools = exec_tools(ExecConfig(sandbox_timeout_s=60), sandbox=manager, record=recorder)
        self.exec: ExecTool = tools[0]  # type: ignore[assignment]
        self.process: ProcessTool = tools[1]  # type: ignore[assignment]
        self.ctx = ToolContext(agent="main", session_key="s1", workspace=str(workspace))

    async def run(self, command: str, **args: Any) -> Any:
        return await self.exec.execute(self.ctx, {"command": command, **args})


@pytest.fixture
async def sandbox(docker_host: str, workspace: Path, store: EventStore) -> AsyncIterator[Any]:
    managers: list[SandboxManager] = []

    def make(**config: Any) -> Sandboxed:
        manager = SandboxManager(
            SandboxConfig(docker_host=docker_host, **config), record=StoreRecorder(store)
        )
        managers.append(manager)
        return Sandboxed(manager, workspace, StoreRecorder(store))

    yield make
    for manager in managers:
        await manager.aclose()


async def test_commands_run_in_the_container_with_the_workspace_mounted(sandbox: Any) -> None:
    box = sandbox()
    result = await box.run("cat /workspace/hello.txt; pwd; exit 5")
    assert result.for_llm == "hello from the host\n/workspace\n[exit code 5]"
    assert result.details["host"] == "sandbox"


async def test_there_is_no_network(sandbox: Any) -> None:
    box = sandbox()
    interfaces = await box.run("ls /sys/class/net")
    assert interfaces.for_llm == "lo\n[exit code 0]"
    routes = await box.run("ip route")
    assert routes.for_llm == "[exit code 0]"  # not even a default route
    connect = await box.run("telnet 1.1.1.1 80")
    assert connect.details["exit_code"] != 0 and "Network is unreachable" in connect.for_llm


async def test_a_read_only_mount_refuses_writes(sandbox: Any, workspace: Path) -> None:
    box = sandbox(workspace_access="ro")
    result = await box.run("echo changed > hello.txt; touch new.txt")
    assert "Read-only file system" in result.for_llm and result.details["exit_code"] != 0
    assert (workspace / "hello.txt").read_text() == "hello from the host\n"
    assert not (workspace / "new.txt").exists()


async def test_a_read_write_mount_takes_writes(sandbox: Any, workspace: Path) -> None:
    box = sandbox(workspace_access="rw")
    await box.run("mkdir -p out && echo made > out/file.txt")
    assert (workspace / "out" / "file.txt").read_text() == "made\n"


async def test_the_memory_limit_kills(sandbox: Any) -> None:
    box = sandbox(memory="32m")
    result = await box.run("x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo survived")
    assert result.details["exit_code"] == 137 and "survived" not in result.for_llm


async def test_the_host_environment_is_invisible(
    sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("CLAWLOG_HOST_ONLY", "host")
    box = sandbox()
    result = await box.run("env")
    assert "sk-ant-secret" not in result.for_llm and "CLAWLOG_HOST_ONLY" not in result.for_llm
    names = {line.split("=", 1)[0] for line in result.for_llm.splitlines() if "=" in line}
    assert names <= {"PATH", "HOME", "LANG", "HOSTNAME", "PWD", "SHLVL"}
    host_files = await box.run("ls /root /home /etc 2>&1")
    assert "No such file or directory" in host_files.for_llm  # the image's root, not the host's


async def test_the_container_is_locked_down(sandbox: Any, engine: Any) -> None:
    box = sandbox(pids_limit=64, cpus=0.5, memory="128m")
    status = await box.run(
        "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; touch /etc/x; touch /tmp/ok && echo tmp-writable"
    )
    assert "CapEff:\t0000000000000000" in status.for_llm and "NoNewPrivs:\t1" in status.for_llm
    assert "Read-only file system" in status.for_llm and "tmp-writable" in status.for_llm
    config = engine.containers.get(box.manager.container_id("main/s1")).attrs["HostConfig"]
    assert config["NetworkMode"] == "none" and config["CapDrop"] == ["ALL"]
    assert config["SecurityOpt"] == ["no-new-privileges"] and config["ReadonlyRootfs"] is True
    assert config["PidsLimit"] == 64 and config["NanoCpus"] == 500_000_000
    assert config["Memory"] == 128 * 1024 * 1024 and "/tmp" in config["Tmpfs"]


async def test_one_container_per_session_reused_then_removed(
    sandbox: Any, engine: Any, store: EventStore
) -> None:
    box = sandbox()
    first = await box.run("hostname")
    container = box.manager.container_id("main/s1")
    assert (await box.run("hostname")).for_llm == first.for_llm
    assert box.manager.container_id("main/s1") == container
    other = ToolContext(agent="main", session_key="s2", workspace=box.ctx.workspace)
    await box.exec.execute(other, {"command": "true"})
    assert box.manager.container_id("main/s2") not in (None, container)
    await box.manager.release("main/s1")
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(container)
    await box.manager.aclose()
    mine = engine.containers.list(
        all=True, filters={"label": f"clawlog.manager={box.manager.manager_id}"}
    )
    assert mine == []
    types = [r.type for r in await store.read_stream("session/main/s1")]
    assert types == ["sandbox.container_started", "sandbox.container_removed"]


async def test_a_timeout_kills_the_command_group_and_keeps_the_container(
    sandbox: Any, engine: Any
) -> None:
    box = sandbox()
    with pytest.raises(CommandTimedOut, match=r"^command timed out after 1 s"):
        await box.run("sleep 300 & sleep 300", timeout=1)
    left = await box.run("ps -o comm | grep -c '^sleep$'")
    assert left.for_llm.startswith("1\n")  # only the container's own keep-alive sleep
    assert engine.containers.get(box.manager.container_id("main/s1")).status == "running"


async def test_what_a_finished_command_left_running_is_killed(sandbox: Any) -> None:
    box = sandbox()
    result = await box.run("sleep 300 & echo started")
    assert result.for_llm == "started\n[exit code 0]"
    left = await box.run("ps -o comm | grep -c '^sleep$'")
    assert left.for_llm.startswith("1\n")


async def test_background_runs_in_the_sandbox(sandbox: Any) -> None:
    box = sandbox()
    started = await box.run("read line; echo got $line", background=True)
    pid = started.details["process_id"]
    await box.process.execute(box.ctx, {"action": "input", "processId": pid, "input": "ping\n"})
    seen = ""
    polled = await box.process.execute(
        box.ctx, {"action": "poll", "processId": pid, "waitMs": 10_000}
    )
    seen += polled.for_llm
    while polled.details["running"]:
        polled = await box.process.execute(
            box.ctx, {"action": "poll", "processId": pid, "waitMs": 10_000}
        )
        seen += polled.for_llm
    assert "got ping" in seen and polled.details["exit_code"] == 0
    assert polled.details["host"] == "sandbox"


async def test_the_image_is_configurable_and_a_missing_one_is_refused(
    sandbox: Any, workspace: Path
) -> None:
    box = sandbox(image="localhost/no-such-image:latest")
    from clawlog.tools.errors import SandboxRefused

    with pytest.raises(SandboxRefused, match="not available"):
        await box.run("touch /workspace/ran")
    assert not (workspace / "ran").exists()
