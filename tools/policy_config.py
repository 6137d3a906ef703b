"""The configuration the policy engine reads (seed 002 §11 ``ToolsConfig`` shapes).

List semantics, everywhere: ``None`` means "not configured" (the step is skipped); an
empty list is a real list that matches nothing. Entries are tool names, ``group:{name}``,
``*`` (everything) or fnmatch patterns such as ``mcp_github_*``.
"""

from __future__ import annotations

import msgspec

from .groups import LEAF_DENY, OWNER_ONLY_TOOLS, PROFILES, SUBAGENT_DENY

__all__ = ["PolicyConfig", "ProviderToolPolicy", "ToolPolicy"]


class ProviderToolPolicy(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Overrides for one model provider (``byProvider.{name}``)."""

    profile: str | None = None
    allow: list[str] | None = None
    also_allow: list[str] = msgspec.field(default_factory=list)
    deny: list[str] = msgspec.field(default_factory=list)


class ToolPolicy(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The global ``tools`` section, or one agent's ``agents.{key}.tools``."""

    profile: str | None = None
    allow: list[str] | None = None
    also_allow: list[str] = msgspec.field(default_factory=list)
    deny: list[str] = msgspec.field(default_factory=list)
    by_provider: dict[str, ProviderToolPolicy] = msgspec.field(default_factory=dict)

    def provider(self, name: str) -> ProviderToolPolicy:
        return self.by_provider.get(name) or _NO_PROVIDER_POLICY


_NO_PROVIDER_POLICY = ProviderToolPolicy()


class PolicyConfig(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Everything that decides which tools a caller may use."""

    tools: ToolPolicy = msgspec.field(default_factory=ToolPolicy)
    agents: dict[str, ToolPolicy] = msgspec.field(default_factory=dict)
    #: Step 7, for group chats: allow lists keyed ``{channel}:{chat_id}``, ``{chat_id}``
    #: or ``*`` (first found wins).
    chat_groups: dict[str, list[str]] = msgspec.field(default_factory=dict)
    subagent_deny: list[str] = msgspec.field(default_factory=lambda: list(SUBAGENT_DENY))
    leaf_deny: list[str] = msgspec.field(default_factory=lambda: list(LEAF_DENY))
    owner_only: list[str] = msgspec.field(default_factory=lambda: list(OWNER_ONLY_TOOLS))
    #: Per-user ``allowedTools`` (seed 003 ``users.json``); a user not listed may use all.
    users: dict[str, list[str]] = msgspec.field(default_factory=dict)

    def profiles_used(self) -> list[str]:
        found = []
        for policy in (self.tools, *self.agents.values()):
            found.append(policy.profile)
            found.extend(p.profile for p in policy.by_provider.values())
        return [p for p in found if p is not None]

    def unknown_profiles(self) -> list[str]:
        return sorted({p for p in self.profiles_used() if p not in PROFILES})
