"""An MCP tool's side effects come from its annotations, with the specification's defaults
for absent hints (readOnlyHint false, idempotentHint false): read-only → none,
idempotent → idempotent (destructive or not), anything else → external."""

from __future__ import annotations

import pytest

from clawlog.actors.mcp import McpServers
from clawlog.actors.mcp.tool import mcp_side_effects
from clawlog.events.domain.mcp import McpToolInfo
from clawlog.tools import side_effects_of
from tests.mcp.conftest import Peers, everything_stdio, notes_stdio


@pytest.mark.parametrize(
    ("hints", "expected"),
    [
        ({}, "external"),  # no annotations: the defaults say neither
        ({"read_only": True}, "none"),
        ({"read_only": True, "idempotent": False}, "none"),  # idempotency is moot
        ({"read_only": False, "idempotent": True}, "idempotent"),
        ({"idempotent": True, "destructive": True}, "idempotent"),  # delete-by-id
        ({"read_only": False, "destructive": False}, "external"),  # additive: not idempotent
        ({"idempotent": False}, "external"),
    ],
)
def test_annotations_map_to_side_effects(hints: dict[str, bool], expected: str) -> None:
    info = McpToolInfo(name="t", registered_name="mcp_s_t", **hints)
    assert mcp_side_effects(info) == expected


async def test_the_everything_servers_annotated_tools_declare_what_they_said(
    peers: Peers, servers: McpServers
) -> None:
    await servers.add(everything_stdio(peers))
    await servers.grant_agent("everything", "main")
    await servers.wait_connected("everything", 30)
    tools = {t.name.removeprefix("mcp_everything_"): t for t in servers.tools_for("main")}
    declared = {name: side_effects_of(tools[name], {}) for name in tools}
    # readOnlyHint: true
    assert declared["echo"] == "none"
    assert declared["get-structured-content"] == "none"
    # readOnlyHint: false, idempotentHint: true
    assert declared["gzip-file-as-resource"] == "idempotent"
    # readOnlyHint: false, idempotentHint: false
    assert declared["toggle-simulated-logging"] == "external"
    assert declared["toggle-subscriber-updates"] == "external"


async def test_a_destructive_tool_without_an_idempotent_hint_is_external(
    servers: McpServers,
) -> None:
    await servers.add(notes_stdio())
    await servers.grant_agent("notes", "main")
    await servers.wait_connected("notes", 30)
    tools = {t.name: t for t in servers.tools_for("main")}
    assert side_effects_of(tools["mcp_notes_delete_note"], {"name": "x"}) == "external"
    assert side_effects_of(tools["mcp_notes_read_note"], {"name": "x"}) == "none"
    assert side_effects_of(tools["mcp_notes_echo"], {"text": "x"}) == "external"  # no hints
