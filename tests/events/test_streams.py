"""Every stream family keeps its name format: the names are in every log ever written.

``clawlog.events.streams`` is the one place a stream name is built; these pin each
family's format, and that no other package re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from clawlog.events import streams
from clawlog.events.store import validate_stream

#: (function, its arguments, the stream name it must build)
FAMILIES: list[tuple[Callable[..., str], tuple[Any, ...], str]] = [
    (streams.session_stream, ("main", "u1"), "session/main/u1"),
    (streams.session_stream, ("main", ""), "session/main/"),
    (streams.subagent_stream, ("sa-0123456789ab",), "subagent/sa-0123456789ab"),
    (streams.agent_stream, ("main",), "agent/main"),
    (streams.team_stream, ("release",), "team/release"),
    (streams.link_stream, ("lead", "billing"), "link/lead->billing"),
    (streams.mcp_stream, ("github",), "mcp/github"),
    (streams.handoff_stream, ("telegram", "-100123"), "handoff/telegram/-100123"),
    (streams.handoff_stream, ("web chat", "a/b"), "handoff/web~20chat/a~2fb"),
    (streams.routines_stream, ("main",), "routines/main"),
    (streams.inbox_stream, ("main", "u1"), "inbox/main/u1"),
    (streams.workspace_stream, ("main",), "workspace/main"),
    (streams.exec_stream, ("main", "u1"), "exec/main/u1"),
    (streams.sandbox_stream, ("main/u1",), "sandbox/main/u1"),
    (streams.custom_tools_stream, (), "tools/custom"),
    (streams.guardian_stream, (), "system/guardian"),
    (streams.guardian_stream, ("host:42:abcd",), "system/guardian/host:42:abcd"),
]


@pytest.mark.parametrize(
    ("build", "args", "name"), FAMILIES, ids=[f"{f.__name__}{a}" for f, a, _ in FAMILIES]
)
def test_each_family_builds_the_name_it_always_built(
    build: Callable[..., str], args: tuple[Any, ...], name: str
) -> None:
    assert build(*args) == name


def test_every_family_function_is_pinned() -> None:
    assert {f.__name__ for f, _, _ in FAMILIES} == set(streams.__all__)


@pytest.mark.parametrize(("build", "args", "name"), [f for f in FAMILIES if f[2][-1] != "/"])
def test_every_built_name_is_a_valid_stream(
    build: Callable[..., str], args: tuple[Any, ...], name: str
) -> None:
    assert validate_stream(build(*args)) == name


def test_a_handoff_route_needs_a_channel_and_a_chat() -> None:
    with pytest.raises(ValueError, match="channel and a chat id"):
        streams.handoff_stream("", "42")


@pytest.mark.parametrize(
    ("package", "name"),
    [
        ("clawlog.actors.agents", "agent_stream"),
        ("clawlog.actors.agents", "session_stream"),
        ("clawlog.actors.delegation", "link_stream"),
        ("clawlog.actors.teams", "team_stream"),
    ],
)
def test_stream_names_have_one_home(package: str, name: str) -> None:
    # clawlog.events.streams is the one home of every stream name: no package re-exports them.
    import importlib

    assert hasattr(streams, name)
    module = importlib.import_module(package)
    assert name not in module.__all__
    assert not hasattr(module, name)


def test_standalone_tool_stores_keep_their_default_streams(tmp_path: Any) -> None:
    from clawlog.tools.context import ToolContext
    from clawlog.tools.exec.processes import ProcessRegistry
    from clawlog.tools.sandbox import SandboxConfig, SandboxManager

    ctx = ToolContext(agent="main", session_key="u1")
    assert ProcessRegistry().stream_for(ctx) == "session/main/u1"
    manager = SandboxManager(SandboxConfig(docker_host="unix:///nonexistent/docker.sock"))
    assert manager._stream_for("main/u1") == "session/main/u1"
    assert manager._stream_for("shared") == "session/shared"


def test_standalone_workspace_stores_record_on_the_agent_stream() -> None:
    from clawlog.tools.workspace import ContextStore, MemoryStore

    memory = MemoryStore()
    try:
        assert memory._stream_for("main") == "agent/main"
    finally:
        memory.close()
    assert ContextStore()._stream_for("main") == "agent/main"
