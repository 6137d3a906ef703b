"""Real MCP servers on loopback for the MCP suites.

``scripts/mcp_servers.sh`` installs them (server-everything from npm into ``.mcp-peers/``,
mcp-server-time from PyPI). Without them these tests skip locally with a message saying
so, and fail in CI (``CI`` set), where a missing server is a broken setup.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from clawlog.actors import System
from clawlog.actors.mcp import McpServerConfig, McpServers, mcp_servers
from clawlog.actors.providers import ModelReply, ModelRequest, calls, reply

# Re-exported: the MCP, telemetry and ui tests import these from here.
from tests.support.waiting import count as count
from tests.support.waiting import types as types
from tests.support.waiting import wait_for_events as wait_for_events

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
LOOPBACK = HERE / "loopback.cjs"
NOTES_SERVER = HERE / "notes_server.py"
DEFAULT_JS = ROOT / ".mcp-peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
INSTALL_HINT = "run scripts/mcp_servers.sh to install them"

#: Small numbers so faults play out in a fraction of a second.
FAST: dict[str, Any] = dict(
    call_timeout_s=5.0,
    connect_timeout_s=15.0,
    health_interval_s=30.0,
    health_timeout_s=1.0,
    backoff_initial_s=0.05,
    backoff_max_s=0.4,
    max_attempts=8,
)


class Peers(msgspec.Struct, frozen=True):
    node: str
    everything_js: str
    time_server: str


def _find_peers() -> tuple[Peers | None, list[str]]:
    node = shutil.which("node")
    js = os.environ.get("MCP_EVERYTHING_JS") or str(DEFAULT_JS)
    time_server = os.environ.get("MCP_SERVER_TIME") or shutil.which("mcp-server-time") or ""
    missing = []
    if node is None:
        missing.append("node (apt-get install nodejs npm)")
    if not Path(js).is_file():
        missing.append(f"@modelcontextprotocol/server-everything ({js})")
    if not time_server:
        missing.append("mcp-server-time (pip install mcp-server-time)")
    if missing:
        return None, missing
    assert node is not None
    return Peers(node=node, everything_js=js, time_server=time_server), []


@pytest.fixture(scope="session")
def peers() -> Peers:
    found, missing = _find_peers()
    if found is None:
        message = f"MCP test servers missing: {', '.join(missing)}; {INSTALL_HINT}"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found


@pytest.fixture
async def system(tmp_path: Path) -> AsyncIterator[System]:
    async with System.open(tmp_path / "log.db") as opened:
        yield opened


@pytest.fixture
def servers(system: System) -> McpServers:
    return mcp_servers(system)


def everything_stdio(peers: Peers, name: str = "everything", **options: Any) -> McpServerConfig:
    return McpServerConfig(
        name=name,
        command=peers.node,
        args=[peers.everything_js, "stdio"],
        **{**FAST, **options},
    )


def notes_stdio(name: str = "notes", **options: Any) -> McpServerConfig:
    return McpServerConfig(
        name=name, command=sys.executable, args=[str(NOTES_SERVER)], **{**FAST, **options}
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class HttpEverything:
    """server-everything over SSE or streamable HTTP, bound to 127.0.0.1 only."""

    def __init__(self, peers: Peers, mode: str) -> None:
        self.peers, self.mode = peers, mode
        self.port = free_port()
        self.process: asyncio.subprocess.Process | None = None
        self.output: list[str] = []
        self._drain: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        path = "/sse" if self.mode == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    async def start(self, timeout: float = 20.0) -> None:
        """Start (or restart, on the same port) and wait until it listens."""
        self.process = await asyncio.create_subprocess_exec(
            self.peers.node,
            "-r",
            str(LOOPBACK),
            self.peers.everything_js,
            self.mode,
            env={**os.environ, "PORT": str(self.port), "HOST": "127.0.0.1"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        assert self.process.stdout is not None
        async with asyncio.timeout(timeout):
            while True:
                line = (await self.process.stdout.readline()).decode(errors="replace")
                if not line:
                    raise RuntimeError(f"server-everything {self.mode} exited: {self.output}")
                self.output.append(line.rstrip())
                if str(self.port) in line:  # "... listening on port N" / "running on port N"
                    break
        self._drain = asyncio.create_task(self._read_rest(self.process))

    async def _read_rest(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        while line := await process.stdout.readline():
            self.output.append(line.decode(errors="replace").rstrip())

    def signal(self, number: int) -> None:
        assert self.process is not None
        self.process.send_signal(number)

    async def kill(self) -> None:
        if self.process is None or self.process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
        await self.process.wait()
        if self._drain is not None:
            await self._drain


@pytest.fixture
async def http_servers(peers: Peers) -> AsyncIterator[Callable[[str], Any]]:
    """Start server-everything in ``sse`` or ``streamableHttp`` mode; killed at the end."""
    started: list[HttpEverything] = []

    async def start(mode: str) -> HttpEverything:
        server = HttpEverything(peers, mode)
        await server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        await server.kill()


def child_pids(marker: str) -> list[int]:
    """This process's children whose command line contains ``marker`` (stdio servers)."""
    found = []
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[1] == me and marker in cmdline and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def answer_with_tool_output(tool: str, /, **arguments: object) -> Callable[..., ModelReply]:
    """A model that calls ``tool`` once, then answers with what the tool said."""

    def script(request: ModelRequest) -> ModelReply:
        last = request.messages[-1]
        if last.role == "tool":
            return reply(f"tool said: {last.content}")
        return calls([(tool, dict(arguments))], ids=["c1"])

    return script
