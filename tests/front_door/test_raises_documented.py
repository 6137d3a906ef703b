"""Every public call of the embedding API says what it raises: a ``Raises:`` section in its
docstring, or that it never raises."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from clawlog import AgentWorkspaces, System, check_command
from clawlog.actors.mcp import McpServers, mcp_servers


def _public_calls(cls: type) -> list[tuple[str, Callable[..., Any]]]:
    found = []
    for name, value in inspect.getmembers(cls):
        if name.startswith("_") or isinstance(inspect.getattr_static(cls, name), property):
            continue
        if callable(value):
            found.append((f"{cls.__name__}.{name}", value))
    return found


CALLS = [
    *_public_calls(System),
    *_public_calls(AgentWorkspaces),
    *_public_calls(McpServers),
    ("check_command", check_command),
    ("mcp_servers", mcp_servers),
]


def test_the_calls_checked_include_the_whole_system_api() -> None:
    names = {name for name, _ in CALLS}
    assert {"System.open", "System.send", "System.approve", "System.link_agents"} <= names
    assert {"AgentWorkspaces.workspace_path", "McpServers.call"} <= names


@pytest.mark.parametrize(("name", "call"), CALLS, ids=[name for name, _ in CALLS])
def test_each_public_call_documents_what_it_raises(name: str, call: Callable[..., Any]) -> None:
    doc = inspect.getdoc(call) or ""
    prose = " ".join(doc.split()).lower()
    assert "\nRaises:\n" in doc or "never raises" in prose, name
