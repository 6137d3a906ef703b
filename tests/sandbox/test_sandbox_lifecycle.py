"""No sandbox container outlives its manager, against a real engine: not one whose creation
was still under way when the manager closed, not one whose start failed; and a closed
manager refuses new sessions."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from clawlog.tools.errors import SandboxClosed, SandboxRefused
from clawlog.tools.exec import ExecTool
from clawlog.tools.sandbox import SandboxConfig, SandboxManager

from ..exec.support import context

pytestmark = pytest.mark.docker


@pytest.fixture
def engine(docker_host: str) -> Iterator[Any]:
    client = docker.DockerClient(base_url=docker_host, timeout=60)
    yield client
    client.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def containers_of(engine: Any, manager: SandboxManager) -> list[Any]:
    """Every container labelled with ``manager``'s id, running or not."""
    label = f"clawlog.manager={manager.manager_id}"
    found: list[Any] = engine.containers.list(all=True, filters={"label": label})
    return found


@contextlib.asynccontextmanager
async def engine_events(docker_host: str, **filters: str) -> AsyncIterator[asyncio.StreamReader]:
    """The engine's event stream (``GET /events``), one JSON object a line. ``since`` a
    moment ago: the engine may subscribe after it answered, and replays what it missed."""
    if docker_host.startswith("unix://"):
        reader, writer = await asyncio.open_unix_connection(docker_host.removeprefix("unix://"))
    else:  # tcp://host:port
        address = urllib.parse.urlsplit(docker_host)
        reader, writer = await asyncio.open_connection(address.hostname, address.port)
    try:
        query = urllib.parse.urlencode(
            {
                "since": str(int(time.time()) - 2),
                "filters": json.dumps({name: [value] for name, value in filters.items()}),
            }
        )
        writer.write(f"GET /events?{query} HTTP/1.0\r\nHost: docker\r\n\r\n".encode())
        assert b" 200 " in await reader.readline()
        while (await reader.readline()).strip():
            pass  # the headers
        yield reader
    finally:
        writer.close()
        await writer.wait_closed()


async def test_closing_while_a_container_is_being_created_leaves_none(
    docker_host: str, engine: Any, workspace: Path
) -> None:
    manager = SandboxManager(SandboxConfig(docker_host=docker_host))
    label = f"clawlog.manager={manager.manager_id}"
    async with engine_events(docker_host, type="container", event="create", label=label) as seen:
        starting = asyncio.create_task(manager.ensure("main/s1", str(workspace)))
        async with asyncio.timeout(60):
            event = json.loads(await seen.readline())
        assert event["Action"] == "create"
        # the engine has created the container; the manager has not heard back yet
        await manager.aclose()
    with pytest.raises(SandboxClosed):
        await starting
    assert containers_of(engine, manager) == []
    with pytest.raises(SandboxClosed, match="closed"):
        await manager.ensure("main/s2", str(workspace))


async def test_a_container_that_fails_to_start_is_removed(
    docker_host: str, engine: Any, workspace: Path
) -> None:
    # the image has no /etc/passwd: the engine creates the container, then cannot start it
    manager = SandboxManager(SandboxConfig(docker_host=docker_host, user="nosuchuser"))
    try:
        with pytest.raises(SandboxRefused, match="nosuchuser"):
            await ExecTool(sandbox=manager).execute(context(workspace), {"command": "true"})
        assert containers_of(engine, manager) == []
    finally:
        await manager.aclose()


async def test_closing_removes_every_container_carrying_the_managers_label(
    docker_host: str, engine: Any, workspace: Path
) -> None:
    manager = SandboxManager(SandboxConfig(docker_host=docker_host))
    await manager.ensure("main/s1", str(workspace))
    # one the manager never heard of: its create call's answer was lost
    stray = engine.containers.create(
        SandboxConfig().image,
        ["sleep", "infinity"],
        labels={"clawlog.sandbox": "main/s9", "clawlog.manager": manager.manager_id},
    )
    await manager.aclose()
    assert containers_of(engine, manager) == []
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(stray.id)
