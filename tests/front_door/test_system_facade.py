"""The System is one facade class in one file; MCP servers are its collaborator, reached
through ``System.mcp`` and loaded only when first used."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

from clawlog import System
from clawlog.actors import system as system_module

ROOT = Path(__file__).parents[2]


def test_the_system_is_one_class_defined_in_one_module() -> None:
    assert System.__mro__ == (System, object)
    public = [name for name in vars(System) if not name.startswith("_")]
    assert {"register_agent", "send", "create_team", "link_agents", "mcp"} <= set(public)
    for name in public:
        member = inspect.getattr_static(System, name)
        function = member.fget if isinstance(member, property) else member
        function = getattr(function, "__func__", function)
        if callable(function):
            assert function.__module__ == system_module.__name__, name


async def test_system_mcp_is_the_mcp_servers_of_the_system(tmp_path: Path) -> None:
    from clawlog.actors.mcp import McpServers, mcp_servers

    async with System.open(tmp_path / "facade.db") as system:
        servers = system.mcp
        assert isinstance(servers, McpServers)
        assert servers is system.mcp
        assert servers is mcp_servers(system)


def test_importing_the_system_loads_no_mcp() -> None:
    code = (
        "import sys\n"
        "from clawlog.actors.system import System\n"
        "loaded = [m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', "
        "'clawlog.actors.mcp'))]\n"
        "print(','.join(sorted(loaded)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == ""
