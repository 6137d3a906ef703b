"""The tables of the policy engine: tool groups, profiles, subagent deny lists, owner-only
tools (seed 001 §5-6; seed 002 §5 for the names OpenClaw uses).

Groups are the union of seed 001's policy table, its tool inventory and seed 002's group
table, so a policy reads the same whichever naming family a tool follows. Names that are
not registered never reach a model, so extra members cost nothing. Beyond these, a tool
is in the group its ``group`` attribute names; ``mcp`` and ``mcp:{server}`` are dynamic
(every tool whose group is ``mcp:{server}``); ``native`` (alias ``goclaw``, ``openclaw``,
``clawlog``) is every tool that is not an MCP tool.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "LEAF_DENY",
    "NATIVE_GROUPS",
    "OWNER_ONLY_TOOLS",
    "PROFILES",
    "SUBAGENT_DENY",
    "TOOL_GROUPS",
    "groups_of",
]

TOOL_GROUPS: Mapping[str, frozenset[str]] = {
    "fs": frozenset(
        {"read_file", "write_file", "list_files", "edit", "edit_file", "search", "glob"}
        | {"read", "write", "apply_patch", "grep", "find", "ls"}  # seed 002 names
    ),
    "runtime": frozenset({"exec", "process"}),
    "web": frozenset({"web_search", "web_fetch", "http"}),  # http: seed 004's tool
    "memory": frozenset({"memory_search", "memory_get"}),
    "sessions": frozenset(
        {"sessions_list", "sessions_history", "sessions_send", "spawn", "session_status"}
        | {"sessions_spawn", "subagents", "subagent"}  # seed 000 / 002 names
    ),
    "ui": frozenset({"browser", "canvas"}),
    "automation": frozenset({"cron", "gateway"}),
    "messaging": frozenset({"message", "create_forum_topic"}),
    "delegation": frozenset({"delegate", "handoff", "delegate_search", "evaluate_loop"}),
    "team": frozenset({"team_tasks", "team_message"}),
    "nodes": frozenset({"nodes"}),
    #: Custom tools are named at run time: each is in this group by its ``group``.
    "custom": frozenset(),
}
#: Other spellings of a group name.
GROUP_ALIASES: Mapping[str, str] = {"teams": "team"}
#: Composite groups: every tool that is not an MCP tool.
NATIVE_GROUPS = frozenset({"native", "goclaw", "openclaw", "clawlog"})

#: Profile name -> allow entries; ``None`` means no restriction (seed 001 §5).
PROFILES: Mapping[str, tuple[str, ...] | None] = {
    "full": None,
    "coding": (
        "group:fs",
        "group:runtime",
        "group:sessions",
        "group:memory",
        "group:web",
        "read_image",
        "create_image",
        "skill_search",
        "image",
    ),
    "messaging": (
        "group:messaging",
        "group:web",
        "group:sessions",
        "read_image",
        "skill_search",
    ),
    "minimal": ("session_status",),
}

#: Denied to every subagent, at any depth (seed 001 §6).
SUBAGENT_DENY: tuple[str, ...] = (
    "gateway",
    "agents_list",
    "whatsapp_login",
    "session_status",
    "cron",
    "memory_search",
    "memory_get",
    "sessions_send",
)
#: Also denied to a subagent at the maximum depth: it cannot spawn or look around.
LEAF_DENY: tuple[str, ...] = (
    "sessions_list",
    "sessions_history",
    "sessions_spawn",
    "spawn",
    "subagent",
)
#: Removed unless the sender is the owner (seed 002 §5), besides tools marked owner_only.
OWNER_ONLY_TOOLS: tuple[str, ...] = ("whatsapp_login", "cron", "gateway")

_MEMBERSHIP: dict[str, frozenset[str]] = {}
for _group, _members in TOOL_GROUPS.items():
    for _name in _members:
        _MEMBERSHIP[_name] = _MEMBERSHIP.get(_name, frozenset()) | {_group}


def canonical_group(name: str) -> str:
    return GROUP_ALIASES.get(name, name)


def groups_of(tool_name: str, tool_group: str = "") -> frozenset[str]:
    """Every group a tool belongs to: static tables, its own ``group``, mcp, native."""
    groups = set(_MEMBERSHIP.get(tool_name, ()))
    own = canonical_group(tool_group)
    if own:
        groups.add(own)
    if own == "mcp" or own.startswith("mcp:"):
        groups.add("mcp")
    else:
        groups.update(NATIVE_GROUPS)
    return frozenset(groups)
