"""Grants decide which tools an (agent, user) sees; access requests turn into grants."""

from __future__ import annotations

import pytest

from clawlog.actors import System
from clawlog.actors.errors import McpAccessError
from clawlog.actors.mcp import EVERYONE, Grant, McpServers
from clawlog.actors.mcp.grants import resolve_access, tool_permitted
from clawlog.events.domain.mcp import McpAccessReviewed, McpAgentGrantSet
from tests.mcp.conftest import Peers, everything_stdio, types

ALL = ("echo", "get-sum", "get-env")


def visible(
    agent_grants: dict[str, Grant], user_grants: dict[str, Grant], agent: str, user: str = ""
) -> list[str]:
    access = resolve_access(agent_grants, user_grants, agent, user)
    if access is None:
        return []
    return [name for name in ALL if tool_permitted(access, name, f"mcp_x_{name}")]


def test_without_an_agent_grant_nothing_is_visible() -> None:
    assert visible({}, {}, "main") == []
    assert visible({"other": Grant()}, {}, "main") == []
    assert visible({"main": Grant(enabled=False)}, {}, "main") == []


def test_an_agent_grant_without_lists_shows_every_tool() -> None:
    assert visible({"main": Grant()}, {}, "main") == list(ALL)


def test_deny_beats_allow() -> None:
    grant = Grant(tool_allow=["echo", "get-env"], tool_deny=["get-env"])
    assert visible({"main": grant}, {}, "main") == ["echo"]


def test_lists_take_server_names_registered_names_and_patterns() -> None:
    grant = Grant(tool_allow=["get-*", "mcp_x_echo"], tool_deny=["mcp_x_get-env"])
    assert visible({"main": grant}, {}, "main") == ["echo", "get-sum"]


def test_the_wildcard_agent_grant_applies_to_agents_without_their_own() -> None:
    grants = {EVERYONE: Grant(tool_allow=["echo"]), "main": Grant(enabled=False)}
    assert visible(grants, {}, "anyone") == ["echo"]
    assert visible(grants, {}, "main") == []


def test_a_user_grant_narrows_and_a_disabled_one_hides() -> None:
    agents = {"main": Grant(tool_allow=["echo", "get-sum"])}
    users = {"alice": Grant(tool_allow=["get-sum", "get-env"]), "bob": Grant(enabled=False)}
    assert visible(agents, users, "main", "alice") == ["get-sum"]
    assert visible(agents, users, "main", "bob") == []
    assert visible(agents, users, "main", "carol") == ["echo", "get-sum"]
    assert visible(agents, {EVERYONE: Grant(tool_deny=["echo"])}, "main", "carol") == ["get-sum"]


async def test_grants_filter_the_tool_list_of_a_live_server(
    peers: Peers, system: System, servers: McpServers
) -> None:
    await servers.add(everything_stdio(peers))
    await servers.wait_connected("everything", 20)
    assert servers.tools_for("main") == []

    await servers.grant_agent(
        "everything", "main", tool_allow=["echo", "get-*"], tool_deny=["get-env"], by="admin"
    )
    names = {t.name for t in servers.tools_for("main")}
    assert "mcp_everything_echo" in names and "mcp_everything_get-sum" in names
    assert "mcp_everything_get-env" not in names
    assert "mcp_everything_toggle-simulated-logging" not in names

    await servers.grant_user("everything", "alice", tool_allow=["echo"])
    assert [t.name for t in servers.tools_for("main", "alice")] == ["mcp_everything_echo"]
    assert len(servers.tools_for("main", "bob")) == len(names)

    assert await servers.revoke_agent("everything", "main", by="admin")
    assert servers.tools_for("main") == []
    assert not await servers.revoke_agent("everything", "main")
    stream = types(await system.store.read_stream("mcp/everything"))
    assert stream.count("mcp.agent_grant_set") == 1
    assert stream.count("mcp.user_grant_set") == 1
    assert stream.count("mcp.agent_grant_revoked") == 1


async def test_an_approved_access_request_creates_the_grant_in_the_same_append(
    peers: Peers, system: System, servers: McpServers
) -> None:
    await servers.add(everything_stdio(peers))
    await servers.wait_connected("everything", 20)
    request_id = await servers.request_access(
        "everything", agent="main", tool_allow=["echo"], reason="needs to echo", by="alice"
    )
    [pending] = await servers.access_requests("everything")
    assert (pending.request_id, pending.status, pending.subject) == (request_id, "pending", "main")
    assert servers.tools_for("main") == []

    reviewed = await servers.review_access("everything", request_id, approve=True, by="admin")

    assert reviewed.status == "approved" and reviewed.reviewed_by == "admin"
    assert [t.name for t in servers.tools_for("main")] == ["mcp_everything_echo"]
    assert await servers.access_requests("everything") == []
    events = await system.store.read_stream("mcp/everything")
    review = next(e for e in events if isinstance(e.event, McpAccessReviewed))
    grant = next(e for e in events if isinstance(e.event, McpAgentGrantSet))
    assert grant.version == review.version + 1
    assert grant.recorded_at == review.recorded_at  # one batch
    assert isinstance(grant.event, McpAgentGrantSet)
    assert grant.event.request_id == request_id


async def test_a_rejected_request_grants_nothing_and_cannot_be_reviewed_again(
    peers: Peers, servers: McpServers
) -> None:
    await servers.add(everything_stdio(peers))
    request_id = await servers.request_access("everything", user="bob", reason="curious")
    rejected = await servers.review_access(
        "everything", request_id, approve=False, by="admin", note="no"
    )
    assert rejected.status == "rejected"
    with pytest.raises(McpAccessError, match="already rejected"):
        await servers.review_access("everything", request_id, approve=True, by="admin")
    with pytest.raises(McpAccessError, match="no access request"):
        await servers.review_access("everything", "nope", approve=True)
    assert [r.status for r in await servers.access_requests("everything", status=None)] == [
        "rejected"
    ]


async def test_bad_grant_subjects_are_refused_without_changing_anything(
    peers: Peers, system: System, servers: McpServers
) -> None:
    await servers.add(everything_stdio(peers))
    await servers.wait_connected("everything", 20)
    before = await system.store.stream_version("mcp/everything")
    with pytest.raises(McpAccessError, match="invalid agent key"):
        await servers.grant_agent("everything", "Not An Agent")
    with pytest.raises(McpAccessError, match="not '\\*'"):
        await servers.request_access("everything", agent="*")
    assert await system.store.stream_version("mcp/everything") == before
    [status] = await servers.status("everything")  # the actor did not crash
    assert status.server == "everything"
