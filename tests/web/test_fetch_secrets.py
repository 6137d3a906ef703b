"""``web_fetch`` refuses a URL carrying a secret before anything is sent, as ``http`` does:
a GET needs no approval, so a prompt-injected model could otherwise hand a secret to any
server in a query string."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from clawlog.tools import RecordingSink, ToolContext, ToolPipeline, ToolRegistry, run_tool_call
from clawlog.tools.scrub import Scrubber
from clawlog.tools.web import WebFetchTool, WebPolicy

from .conftest import LocalServer

CTX = ToolContext(agent="main", session_key="s1", user="u1")
OPEN = WebPolicy(allow_loopback=True)
OPENAI_KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2


async def fetch(tool: WebFetchTool, url: str) -> tuple[Any, list[Any]]:
    sink = RecordingSink()
    pipeline = ToolPipeline(ToolRegistry([tool]), scrubber=tool.scrubber)
    result = await run_tool_call(pipeline, CTX, "web_fetch", {"url": url}, sink, call_id="c1")
    return result, sink.events


@pytest.mark.parametrize(
    "suffix", [f"/c?k={OPENAI_KEY}", f"/c/{OPENAI_KEY}", "/c?k=" + OPENAI_KEY.replace("-", "%2D")]
)
async def test_a_url_carrying_a_secret_is_refused_before_sending(
    server: LocalServer, suffix: str
) -> None:
    result, events = await fetch(WebFetchTool(OPEN), server.url(suffix))
    assert result.is_error and result.error_kind == "not_authorized"
    assert "the request was not sent: its URL holds what looks like a secret" in result.for_llm
    assert server.connections == 0
    assert OPENAI_KEY.encode() not in msgspec.json.encode(events)


async def test_a_url_carrying_a_configured_value_is_refused(server: LocalServer) -> None:
    scrubber = Scrubber(["opaque-db-password-31337"])
    result, _ = await fetch(
        WebFetchTool(OPEN, scrubber=scrubber), server.url("/c?p=opaque-db-password-31337")
    )
    assert result.is_error and "a configured secret" in result.for_llm
    assert server.connections == 0
