"""Through a System, a session records the model's tool arguments scrubbed and tools run
with what is recorded: a secret the agent's scrubber knows reaches ``http`` and
``web_fetch`` as ``[REDACTED]``. They refuse such a request rather than send the
placeholder (``Authorization: Bearer [REDACTED]`` would seem to succeed, or fail in a way
nobody can explain)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clawlog import AgentConfig, System
from clawlog.actors.providers import ScriptedModel, call, reply
from clawlog.events.domain.tool import ToolCallCompleted, ToolCallFailed
from clawlog.tools import RecordingSink, ToolContext, ToolPipeline, ToolRegistry, run_tool_call
from clawlog.tools.web import HttpTool, WebFetchTool, WebPolicy

from .conftest import LocalServer, Reply

OPEN = WebPolicy(allow_loopback=True)
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


async def _outcome(path: Path, tool: Any, name: str, **args: Any) -> Any:
    """Let an agent make one call of ``name`` through a System; its last tool event."""
    model = ScriptedModel([call(name, call_id="c1", **args), reply("ok")])
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), model, tools=[tool])
        assert await system.send("main", "s1", "go") == "ok"
        events = await system.store.read_stream("session/main/s1")
    [last] = [e.event for e in events if isinstance(e.event, ToolCallCompleted | ToolCallFailed)]
    return last


async def test_http_refuses_a_header_whose_secret_was_redacted(
    tmp_path: Path, server: LocalServer
) -> None:
    server.route("/api", Reply(200, b"ok", {"Content-Type": "text/plain"}))
    failed = await _outcome(
        tmp_path / "log.db",
        HttpTool(OPEN, requires_approval=False),
        "http",
        method="POST",
        url=server.url("/api"),
        headers=[{"name": "Authorization", "value": f"token {GITHUB_TOKEN}"}],
        body={"q": "x"},
    )
    assert isinstance(failed, ToolCallFailed) and failed.error_kind == "not_authorized"
    assert "holds [REDACTED], where clawlog removed a secret" in failed.message
    assert server.connections == 0


async def test_web_fetch_refuses_a_url_whose_secret_was_redacted(
    tmp_path: Path, server: LocalServer
) -> None:
    failed = await _outcome(
        tmp_path / "log.db", WebFetchTool(OPEN), "web_fetch", url=server.url(f"/x?k={GITHUB_TOKEN}")
    )
    assert isinstance(failed, ToolCallFailed)
    assert "its URL holds [REDACTED]" in failed.message
    assert server.connections == 0


@pytest.mark.parametrize(
    ("where", "args"),
    [
        ("URL", {"url": "/x?k=%5BREDACTED%5D"}),
        ("header 'X-Key'", {"headers": [{"name": "X-Key", "value": "[REDACTED]"}]}),
        ("body", {"body": "token=%5BREDACTED%5D"}),
    ],
)
async def test_every_place_of_a_request_is_checked_for_the_placeholder(
    server: LocalServer, where: str, args: dict[str, Any]
) -> None:
    call_args: dict[str, Any] = {"method": "POST", "url": server.url("/api"), **args}
    if call_args["url"].startswith("/"):
        call_args["url"] = server.url(call_args["url"])
    pipeline = ToolPipeline(ToolRegistry([HttpTool(OPEN, requires_approval=False)]))
    ctx = ToolContext(agent="main", session_key="s1")
    result = await run_tool_call(pipeline, ctx, "http", call_args, RecordingSink(), call_id="c1")
    assert result.is_error and f"its {where} holds [REDACTED]" in result.for_llm
    assert server.connections == 0
