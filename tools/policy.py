"""The policy engine: which tools a caller may use, and why (seed 001 §5, seed 002 §5).

For one tool and one :class:`ToolContext`, in this order:

1. ``profile``               agent profile, else the global one (``full`` = no restriction)
2. ``provider_profile``      ``byProvider.{provider}.profile`` (agent's, else global)
3. ``allow``                 ``tools.allow``
4. ``provider_allow``        ``tools.byProvider.{provider}.allow``
5. ``agent_allow``           ``agents.{agent}.allow``
6. ``agent_provider_allow``  ``agents.{agent}.byProvider.{provider}.allow``
7. ``group_allow``           the chat group's allow list (group chats only)

Each configured step intersects. Then ``deny`` (global, incl. provider) and
``agent_deny`` subtract; ``also_allow`` adds back what global, agent or provider
``alsoAllow`` name - but never a denied tool (deny beats every allow); a subagent loses
``subagent_deny`` and, at the maximum depth, ``leaf_deny``; ``owner_only`` tools are
removed unless the sender is the owner; the user's ``allowedTools`` (seed 003) and the
per-request allow list are final intersections.

:func:`policy_digest` names an effective configuration by a stable hash: every decided
call records the digest of the policy that decided it (``tool.call_refused``,
``tool.call_started``), so an audit can tell which configuration was in force.
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Iterable, Sequence
from typing import Any, Literal, NamedTuple, get_args

import msgspec

from .approvals import ApprovalConfig
from .base import Tool
from .context import ToolContext
from .errors import PolicyError
from .groups import PROFILES, TOOL_GROUPS, canonical_group, groups_of
from .policy_config import PolicyConfig, ToolPolicy

__all__ = [
    "DIGEST_VERSION",
    "POLICY_STEPS",
    "PolicyDecision",
    "PolicyEngine",
    "PolicyExplanation",
    "PolicyStep",
    "PolicyStepTrace",
    "policy_digest",
]

#: The policy steps, in the order they run.
PolicyStep = Literal[
    "profile",
    "provider_profile",
    "allow",
    "provider_allow",
    "agent_allow",
    "agent_provider_allow",
    "group_allow",
    "deny",
    "agent_deny",
    "also_allow",
    "subagent_deny",
    "leaf_deny",
    "owner_only",
    "user_allowed_tools",
    "request_allow",
]
POLICY_STEPS: tuple[PolicyStep, ...] = get_args(PolicyStep)
Effect = Literal["kept", "removed", "added", "skipped"]


class PolicyStepTrace(msgspec.Struct, frozen=True):
    step: PolicyStep
    effect: Effect
    #: The configuration that applied, and the entry that matched (if any).
    rule: str


class PolicyExplanation(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    allowed: bool
    steps: list[PolicyStepTrace]
    #: The last step that removed or added the tool; "" if none did.
    decided_by: PolicyStep | Literal[""]
    decided_rule: str = ""

    def summary(self) -> str:
        verdict = "allowed" if self.allowed else "not allowed"
        if not self.decided_by:
            return f"{self.tool} is {verdict}: no policy step removed it"
        action = "added" if self.allowed else "removed"
        return f"{self.tool} is {verdict}: {action} by {self.decided_by} ({self.decided_rule})"

    def __str__(self) -> str:
        lines = [self.summary()]
        lines += [f"  {t.step:<22} {t.effect:<8} {t.rule}" for t in self.steps]
        return "\n".join(lines)


class PolicyDecision(NamedTuple):
    """The policy's verdict on one call: allowed or not, and the last step that removed or
    added the tool with its rule (``""`` when no step did)."""

    allowed: bool
    decided_by: PolicyStep | Literal[""]
    rule: str


class _Matcher:
    """A compiled list of entries: names, ``group:x``, ``*`` and fnmatch patterns."""

    __slots__ = ("everything", "groups", "names", "patterns", "source")

    def __init__(self, entries: Sequence[str], source: str) -> None:
        self.source = source
        self.everything = "*" in entries
        self.names = {e for e in entries if not e.startswith("group:") and not _is_glob(e)}
        self.groups = {canonical_group(e[6:]): e for e in entries if e.startswith("group:")}
        self.patterns = [e for e in entries if not e.startswith("group:") and _is_glob(e)]

    def match(self, name: str, groups: frozenset[str]) -> str | None:
        if name in self.names:
            return name
        if self.everything:
            return "*"
        for group in groups:
            entry = self.groups.get(group)
            if entry is not None:
                return entry
        for pattern in self.patterns:
            if fnmatch.fnmatchcase(name, pattern):
                return pattern
        return None


def _is_glob(entry: str) -> bool:
    return any(c in entry for c in "*?[")


class _Compiled(NamedTuple):
    """The matchers that apply to one (agent, provider)."""

    allow_steps: list[tuple[PolicyStep, _Matcher | None]]
    deny: _Matcher | None
    agent_deny: _Matcher | None
    also_allow: _Matcher | None


class PolicyEngine:
    """Evaluates a :class:`PolicyConfig`. Immutable and thread-safe; build a new one to
    change the policy."""

    def __init__(self, config: PolicyConfig | None = None) -> None:
        self.config = config or PolicyConfig()
        unknown = self.config.unknown_profiles()
        if unknown:
            raise PolicyError(f"unknown tool profile(s) {unknown}; known: {sorted(PROFILES)}")
        self._cache: dict[tuple[str, str], _Compiled] = {}
        self._subagent = _Matcher(self.config.subagent_deny, "subagent deny list")
        self._leaf = _Matcher(self.config.leaf_deny, "leaf deny list (max depth)")
        self._owner = _Matcher(self.config.owner_only, "owner-only tools")
        users, chats = self.config.users, self.config.chat_groups
        self._users = {u: _Matcher(v, f"users.{u}.allowedTools") for u, v in users.items()}
        self._chat = {k: _Matcher(v, f"chat_groups.{k}") for k, v in chats.items()}

    # -- queries ------------------------------------------------------------------------
    def is_allowed(self, tool: Tool | str, ctx: ToolContext) -> bool:
        return self._evaluate(tool, ctx, None)[0]

    def decide(
        self, name: str, ctx: ToolContext, *, group: str = "", owner_only: bool = False
    ) -> PolicyDecision:
        """The verdict on a tool known by its name, policy ``group`` and owner-only flag
        (what a recorded call keeps of its tool: ``tools.what_if``), without a trace."""
        return PolicyDecision(*self._evaluate_named(name, group, owner_only, ctx, None))

    def explain(self, tool: Tool | str, ctx: ToolContext) -> PolicyExplanation:
        """Every step's verdict on ``tool`` for ``ctx``: which one kept or removed it."""
        trace: list[PolicyStepTrace] = []
        allowed, decided_by, rule = self._evaluate(tool, ctx, trace)
        name = tool if isinstance(tool, str) else tool.name
        return PolicyExplanation(
            tool=name, allowed=allowed, steps=trace, decided_by=decided_by, decided_rule=rule
        )

    def filter(self, tools: Iterable[Tool], ctx: ToolContext) -> list[Tool]:
        """The tools ``ctx`` may use, in the given order."""
        return [t for t in tools if self._evaluate(t, ctx, None)[0]]

    # -- evaluation ---------------------------------------------------------------------
    def _evaluate(
        self, tool: Tool | str, ctx: ToolContext, trace: list[PolicyStepTrace] | None
    ) -> tuple[bool, PolicyStep | Literal[""], str]:
        if isinstance(tool, str):
            return self._evaluate_named(tool, "", False, ctx, trace)
        return self._evaluate_named(tool.name, tool.group, tool.owner_only, ctx, trace)

    def _evaluate_named(
        self,
        name: str,
        own_group: str,
        owner_flag: bool,
        ctx: ToolContext,
        trace: list[PolicyStepTrace] | None,
    ) -> tuple[bool, PolicyStep | Literal[""], str]:
        groups = groups_of(name, own_group)
        compiled = self._compiled(ctx.agent, ctx.provider)
        run = _Run(name, groups, trace)
        for step, matcher in compiled.allow_steps:
            run.intersect(step, matcher)
        run.intersect("group_allow", self._chat_matcher(ctx))
        run.subtract("deny", compiled.deny)
        run.subtract("agent_deny", compiled.agent_deny)
        run.add_back("also_allow", compiled.also_allow)
        run.subtract("subagent_deny", self._subagent if ctx.is_subagent else None)
        leaf = ctx.is_subagent and ctx.depth >= ctx.max_depth
        run.subtract("leaf_deny", self._leaf if leaf else None)
        run.owner_only(self._owner if not ctx.is_owner else None, owner_flag)
        run.intersect("user_allowed_tools", self._users.get(ctx.user) if ctx.user else None)
        request = (
            _Matcher(ctx.request_allow, "per-request allow list")
            if ctx.request_allow is not None
            else None
        )
        run.intersect("request_allow", request)
        return run.allowed, run.decided_by, run.decided_rule

    def _chat_matcher(self, ctx: ToolContext) -> _Matcher | None:
        if ctx.peer_kind != "group" or not self._chat:
            return None
        for key in (f"{ctx.channel}:{ctx.chat_id}", ctx.chat_id, "*"):
            if key in self._chat:
                return self._chat[key]
        return None

    def _compiled(self, agent: str, provider: str) -> _Compiled:
        key = (agent, provider)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._compile(agent, provider)
        return found

    def _compile(self, agent: str, provider: str) -> _Compiled:
        glob, own = self.config.tools, self.config.agents.get(agent, ToolPolicy())
        gp, ap = glob.provider(provider), own.provider(provider)
        profile, profile_src = _first(
            (own.profile, f"agents.{agent}.profile"), (glob.profile, "tools.profile")
        )
        p_profile, p_src = _first(
            (ap.profile, f"agents.{agent}.byProvider.{provider}.profile"),
            (gp.profile, f"tools.byProvider.{provider}.profile"),
        )
        steps: list[tuple[PolicyStep, _Matcher | None]] = [
            ("profile", _profile_matcher(profile, profile_src)),
            ("provider_profile", _profile_matcher(p_profile, p_src)),
            ("allow", _opt(glob.allow, "tools.allow")),
            ("provider_allow", _opt(gp.allow, f"tools.byProvider.{provider}.allow")),
            ("agent_allow", _opt(own.allow, f"agents.{agent}.allow")),
            ("agent_provider_allow", _opt(ap.allow, f"agents.{agent}.byProvider.{provider}.allow")),
        ]
        return _Compiled(
            allow_steps=steps,
            deny=_opt_nonempty([*glob.deny, *gp.deny], "tools.deny"),
            agent_deny=_opt_nonempty([*own.deny, *ap.deny], f"agents.{agent}.deny"),
            also_allow=_opt_nonempty(
                [*glob.also_allow, *gp.also_allow, *own.also_allow, *ap.also_allow], "alsoAllow"
            ),
        )


class _Run:
    """One evaluation: the current verdict and, when asked for, the trace."""

    __slots__ = ("allowed", "decided_by", "decided_rule", "denied", "groups", "name", "trace")

    def __init__(self, name: str, groups: frozenset[str], trace: list[PolicyStepTrace] | None):
        self.name, self.groups, self.trace = name, groups, trace
        self.allowed, self.denied = True, False
        self.decided_by: PolicyStep | Literal[""] = ""
        self.decided_rule = ""

    def _note(self, step: PolicyStep, effect: Effect, rule: str) -> None:
        if effect in ("removed", "added"):
            self.decided_by, self.decided_rule = step, rule
        if self.trace is not None:
            self.trace.append(PolicyStepTrace(step, effect, rule))

    def intersect(self, step: PolicyStep, matcher: _Matcher | None) -> None:
        if matcher is None:
            self._note(step, "skipped", "not configured")
            return
        entry = matcher.match(self.name, self.groups)
        if not self.allowed:
            self._note(step, "skipped", f"{matcher.source}: already removed")
        elif entry is not None:
            self._note(step, "kept", f"{matcher.source} has {entry!r}")
        else:
            self.allowed = False
            self._note(step, "removed", f"{matcher.source} does not list it")

    def subtract(self, step: PolicyStep, matcher: _Matcher | None) -> None:
        if matcher is None:
            why = "not at max depth" if step == "leaf_deny" else "not configured"
            self._note(step, "skipped", why)
            return
        entry = matcher.match(self.name, self.groups)
        if entry is None:
            self._note(step, "kept", f"{matcher.source} does not list it")
            return
        self.denied = True
        if self.allowed:
            self.allowed = False
            self._note(step, "removed", f"{matcher.source} has {entry!r}")
        else:
            self._note(step, "skipped", f"{matcher.source} has {entry!r}; already removed")

    def add_back(self, step: PolicyStep, matcher: _Matcher | None) -> None:
        entry = matcher.match(self.name, self.groups) if matcher is not None else None
        if matcher is None or entry is None:
            self._note(step, "skipped", "not configured" if matcher is None else "not listed")
        elif self.allowed:
            self._note(step, "kept", f"alsoAllow has {entry!r}; already allowed")
        elif self.denied:
            self._note(step, "skipped", f"alsoAllow has {entry!r} but deny beats allow")
        else:
            self.allowed = True
            self._note(step, "added", f"alsoAllow has {entry!r}")

    def owner_only(self, matcher: _Matcher | None, flagged: bool) -> None:
        if matcher is None:
            self._note("owner_only", "skipped", "the sender is the owner")
            return
        entry = "owner_only=True" if flagged else matcher.match(self.name, self.groups)
        if entry is None:
            self._note("owner_only", "kept", "not an owner-only tool")
        elif self.allowed:
            self.allowed = False
            why = f"owner-only ({entry}); the sender is not the owner"
            self._note("owner_only", "removed", why)
        else:
            self._note("owner_only", "skipped", "owner-only; already removed")


def _first(*candidates: tuple[str | None, str]) -> tuple[str | None, str]:
    for value, source in candidates:
        if value is not None:
            return value, source
    return None, ""


def _profile_matcher(profile: str | None, source: str) -> _Matcher | None:
    if profile is None:
        return None
    entries = PROFILES[profile]
    return _Matcher(["*"] if entries is None else entries, f"{source}={profile}")


def _opt(entries: list[str] | None, source: str) -> _Matcher | None:
    return None if entries is None else _Matcher(entries, source)


def _opt_nonempty(entries: list[str], source: str) -> _Matcher | None:
    return _Matcher(entries, source) if entries else None


#: Raised when what goes into :func:`policy_digest` changes: the same configuration then
#: gets a new digest (the version is part of the hashed document).
DIGEST_VERSION = 1


def policy_digest(
    config: PolicyConfig, approvals: ApprovalConfig | None = None, *, agent: str | None = None
) -> str:
    """A stable hash naming the effective configuration that decides tool calls: 32 hex
    digits (128 bits of SHA-256). The same configuration gives the same digest in every
    process, after every restart, on every machine.

    What goes in, as one canonical JSON document (keys sorted, every field with its
    default written out, so a configuration spelled with or without defaults is the
    same): :data:`DIGEST_VERSION`; the global ``tools`` section; with ``agent``, only that
    agent's section (its own lists, ``ToolPolicy()`` if it has none), else every agent's;
    ``chat_groups``, ``subagent_deny``, ``leaf_deny``, ``owner_only`` and ``users``; the
    members of every profile and tool group the configuration names (clawlog's tables,
    so an upgrade that changes a profile changes the digest); and ``approvals`` (every
    field of the :class:`ApprovalConfig`, or null). Not in it: the approvals allowlist
    (it is in the log, as ``tool.allowlist_changed``), rate limits and loop detection
    (live counters), and the tools themselves (their groups and flags are recorded with
    each call, in ``tool.call_requested.facts``).
    """
    agents = {agent: config.agents.get(agent, ToolPolicy())} if agent is not None else config.agents
    document: dict[str, Any] = {
        "version": DIGEST_VERSION,
        "tools": _written_out(config.tools),
        "agents": {key: _written_out(policy) for key, policy in agents.items()},
        "chat_groups": config.chat_groups,
        "subagent_deny": config.subagent_deny,
        "leaf_deny": config.leaf_deny,
        "owner_only": config.owner_only,
        "users": config.users,
        "approvals": None if approvals is None else _written_out(approvals),
    }
    sections = (config.tools, *agents.values())
    used = [p.profile for p in sections]
    used += [p.profile for section in sections for p in section.by_provider.values()]
    named = sorted({p for p in used if p is not None})
    document["profiles"] = {name: PROFILES.get(name) for name in named}
    groups = sorted(g for g in _groups_named(document) if g in TOOL_GROUPS)
    document["groups"] = {name: sorted(TOOL_GROUPS[name]) for name in groups}
    encoded = msgspec.json.encode(document, order="sorted")
    return hashlib.sha256(encoded).hexdigest()[:32]


def _written_out(value: Any) -> Any:
    """``value`` as plain data with every field of every Struct, defaults included."""
    if isinstance(value, msgspec.Struct):
        return {f: _written_out(getattr(value, f)) for f in value.__struct_fields__}
    if isinstance(value, dict):
        return {str(k): _written_out(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_written_out(v) for v in value]
    return value


def _groups_named(value: Any) -> set[str]:
    """Every ``group:{name}`` entry anywhere in ``value`` (canonical names)."""
    if isinstance(value, str):
        return {canonical_group(value[6:])} if value.startswith("group:") else set()
    if isinstance(value, dict):
        return {g for v in value.values() for g in _groups_named(v)}
    if isinstance(value, list | tuple):
        return {g for v in value for g in _groups_named(v)}
    return set()
