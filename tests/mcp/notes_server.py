"""A small real MCP server for the tests (stdio), on the official SDK's MCPServer.

It has what the reference servers lack: a tool annotated ``destructiveHint``, a tool
whose name collides with a built-in (``echo``) and a tool that tells its process id.
Run: ``python3 tests/mcp/notes_server.py``.
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("clawlog-test-notes", version="1.0.0")
_notes: dict[str, str] = {"todo": "buy milk"}


@server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False))
def read_note(name: str) -> str:
    """Read a note by name."""
    return _notes.get(name, f"no note named {name}")


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def delete_note(name: str) -> str:
    """Delete a note for good."""
    return "deleted" if _notes.pop(name, None) is not None else f"no note named {name}"


@server.tool()
def echo(text: str) -> str:
    """Same name as a built-in tool: must never shadow it."""
    return text


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def whoami() -> str:
    """The server's process id."""
    return str(os.getpid())


if __name__ == "__main__":
    server.run("stdio")
