"""Stream names: one function per stream family, the only place a stream name is built.

A stream's first segment names its family. An actor's stream has that actor as its only
writer; the three streams of :class:`AgentWorkspaces` belong to no actor (the tools append
to them with ``expected_version=ANY``). Every family clawlog writes:

============================  =================  ==========================================
stream                        written by         holds
============================  =================  ==========================================
``session/{agent}/{key}``     Session            a conversation: turns, messages, tool calls;
                                                 background processes of a standalone
                                                 ``ProcessRegistry``, ``sandbox.*`` events
                                                 of a standalone ``SandboxManager``
``subagent/{task_id}``        Subagent           a subagent's conversation
``agent/{agent}``             AgentSupervisor    agent config and subagent tasks; context
                                                 files and memory of standalone stores
``team/{team_id}``            Team               the task board and team messages
``link/{source}->{target}``   DelegationLink     delegations from one agent to another
``mcp/{server}``              McpConnection      server config, connection health, grants
``handoff/{channel}/{chat}``  HandoffRoute       which agent a chat is handed off to
``workspace/{agent}``         AgentWorkspaces    context files and memory documents
``exec/{agent}/{key}``        AgentWorkspaces    a session's background processes, and
                                                 each time the sandbox could not be used
``sandbox/{sandbox_key}``     AgentWorkspaces    a sandbox container started and removed
``system/guardian[/owner]``   Guardian           escalations and dead letters
``routines/{agent}``          AgentRoutines      an agent's routines (cron jobs, heartbeat,
                                                 event and webhook routines), their timers
                                                 and runs
``inbox/{agent}/{key}``       any process        messages for a session another process
                                                 owns (PostgreSQL; ``expected_version=ANY``)
``tools/custom``              System             custom tool definitions and removals
                                                 (``System.define_tool``)
============================  =================  ==========================================

A name is ``/``-separated segments of ``A-Z a-z 0-9 _.:@+=#~,>-``
(:func:`clawlog.events.store.validate_stream`).
"""

from __future__ import annotations

import re

__all__ = [
    "agent_stream",
    "custom_tools_stream",
    "exec_stream",
    "guardian_stream",
    "handoff_stream",
    "inbox_stream",
    "link_stream",
    "mcp_stream",
    "routines_stream",
    "sandbox_stream",
    "session_stream",
    "subagent_stream",
    "team_stream",
    "workspace_stream",
]

_SEGMENT = re.compile(r"[^A-Za-z0-9_.:@+=#~,-]")


def session_stream(agent: str, session_key: str) -> str:
    """``session/{agent}/{session_key}``; with ``session_key=""``, the prefix of all of
    ``agent``'s sessions."""
    return f"session/{agent}/{session_key}"


def subagent_stream(task_id: str) -> str:
    """``subagent/{task_id}``: a subagent's session."""
    return f"subagent/{task_id}"


def agent_stream(agent: str) -> str:
    """``agent/{agent}``: an agent's supervisor."""
    return f"agent/{agent}"


def team_stream(team_id: str) -> str:
    """``team/{team_id}``: a team's board."""
    return f"team/{team_id}"


def link_stream(source: str, target: str) -> str:
    """``link/{source}->{target}``: delegations from agent ``source`` to ``target``."""
    return f"link/{source}->{target}"


def mcp_stream(server: str) -> str:
    """``mcp/{server}``: one MCP server's connection."""
    return f"mcp/{server}"


def handoff_stream(channel: str, chat_id: str) -> str:
    """``handoff/{channel}/{chat_id}``: one chat's handoff route; unusual characters are
    escaped as ``~xx``."""
    if not channel or not chat_id:
        raise ValueError("a handoff route needs both a channel and a chat id")

    def escape(text: str) -> str:
        return _SEGMENT.sub(lambda m: "".join(f"~{b:02x}" for b in m.group().encode()), text)

    return f"handoff/{escape(channel)}/{escape(chat_id)}"


def routines_stream(agent: str) -> str:
    """``routines/{agent}``: an agent's routines and their runs."""
    return f"routines/{agent}"


def inbox_stream(agent: str, session_key: str) -> str:
    """``inbox/{agent}/{session_key}``: messages other processes sent to that session."""
    return f"inbox/{agent}/{session_key}"


def workspace_stream(agent: str) -> str:
    """``workspace/{agent}``: an agent's context files and memory documents; with
    ``agent=""``, the prefix of every agent's."""
    return f"workspace/{agent}"


def exec_stream(agent: str, session_key: str) -> str:
    """``exec/{agent}/{session_key}``: a session's background processes."""
    return f"exec/{agent}/{session_key}"


def sandbox_stream(sandbox_key: str) -> str:
    """``sandbox/{sandbox_key}``: a sandbox container started and removed."""
    return f"sandbox/{sandbox_key}"


def custom_tools_stream() -> str:
    """``tools/custom``: every custom tool defined or removed (one stream for all, so a
    System loads them with one read)."""
    return "tools/custom"


def guardian_stream(owner: str = "") -> str:
    """``system/guardian``; with a store shared by several processes, one per process
    (``system/guardian/{owner}``)."""
    return f"system/guardian/{owner}" if owner else "system/guardian"
