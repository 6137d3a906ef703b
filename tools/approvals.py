"""Approvals (seed 002 §4, seed 001 §4, seed 004 §9): when a call must wait for a person,
and the allowlist that allow-always answers build, folded from events.

Security ``deny < allowlist < full`` and ask ``off < on-miss < always``: a command tool's
own ``security``/``ask`` arguments can only tighten the configured ones (min security,
max ask). For one call, first match wins:

==============================================  ========================================
deny pattern (command tools)                    refused
security=deny, and a command tool or gated      refused
``requires_approval_for(args)`` (dangerous)     ask, no allow-always; refused if ask=off
ask=always                                      ask
gated and in the allowlist (or a safe bin)      run
gated, ask=off                                  refused under security=allowlist, else run
gated                                           ask
otherwise                                       run
==============================================  ========================================

"Gated" means ``tool.requires_approval``, or a command tool under security=allowlist.
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args

import msgspec

from clawlog.events import Event
from clawlog.events.domain.tool import (
    AllowlistMatch,
    ApprovalOutcome,
    ToolAllowlistChanged,
    ToolApprovalDecided,
    ToolApprovalRequested,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallRefused,
)

from .base import Tool
from .deny import match_deny_pattern
from .exec.analysis import analyze as analyze_command

__all__ = [
    "DECISIONS",
    "AllowlistEntry",
    "ApprovalConfig",
    "ApprovalState",
    "ApprovalVerdict",
    "PendingApproval",
    "evaluate_approval",
]

Security = Literal["deny", "allowlist", "full"]
Ask = Literal["off", "on-miss", "always"]
#: Every answer an approval request can end with (``ApprovalOutcome``'s values).
DECISIONS: tuple[ApprovalOutcome, ...] = get_args(ApprovalOutcome)
_SECURITY = ("deny", "allowlist", "full")
_ASK = ("off", "on-miss", "always")
_SHELL_META = set(";&|$`<>\n(){}")


class ApprovalConfig(msgspec.Struct, frozen=True, kw_only=True):
    """When a tool call waits for a person (the table above). System-wide with
    ``System.open(approvals=...)``, per agent with ``AgentConfig(approvals=...)``; ask
    :func:`tools.command_check.check_command` what it means for a shell command. Wrong values
    raise ValueError (or TypeError) naming the field."""

    security: Security = "full"
    ask: Ask = "on-miss"
    #: Seconds a request waits for an answer before it counts as denied (seed 001: 2 min).
    timeout_s: float = 120.0
    #: Command tools -> the argument holding the shell command (deny patterns apply).
    command_tools: dict[str, str] = msgspec.field(
        default_factory=lambda: {"exec": "command", "shell": "command"}
    )
    #: Executables a command tool may run without approval under security=allowlist
    #: (seed 002 ``safeBins``), when the command has no shell operators.
    safe_bins: list[str] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        if self.security not in _SECURITY:
            raise ValueError(
                f"ApprovalConfig.security must be one of {', '.join(_SECURITY)}, "
                f"not {self.security!r}"
            )
        if self.ask not in _ASK:
            raise ValueError(
                f"ApprovalConfig.ask must be one of {', '.join(_ASK)}, not {self.ask!r}"
            )
        timeout = self.timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise TypeError(f"ApprovalConfig.timeout_s must be a number, not {timeout!r}")
        if not timeout > 0:
            raise ValueError(f"ApprovalConfig.timeout_s must be positive, not {timeout!r}")
        tools = self.command_tools
        if not isinstance(tools, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in tools.items()
        ):
            raise TypeError("ApprovalConfig.command_tools maps tool names to argument names (str)")
        bins = self.safe_bins
        if not isinstance(bins, list) or not all(isinstance(name, str) for name in bins):
            raise TypeError("ApprovalConfig.safe_bins must be a list of executable names (str)")


class ApprovalVerdict(msgspec.Struct, frozen=True, kw_only=True):
    action: Literal["run", "ask", "refuse"]
    reason: str = ""
    #: The allowlist pattern this call would add or matched.
    pattern: str = "*"
    allow_always: bool = True
    rule: str = ""


class AllowlistEntry(msgspec.Struct, frozen=True, kw_only=True):
    agent: str
    tool: str
    pattern: str
    match: AllowlistMatch = "exact"
    by: str = ""

    def matches(self, subject: str) -> bool:
        if self.match == "glob":
            return fnmatch.fnmatchcase(subject, self.pattern)
        return subject == self.pattern


class PendingApproval(msgspec.Struct, frozen=True, kw_only=True):
    """A request still waiting, as the log knows it (arguments scrubbed)."""

    call_id: str
    tool: str
    agent: str
    session_key: str
    reason: str
    arguments: dict[str, Any]
    arguments_redacted: bool
    pattern: str
    allow_always: bool
    timeout_s: float
    expires_at: float
    user: str


def command_of(tool: Tool, args: Mapping[str, Any], config: ApprovalConfig) -> str | None:
    """The shell command of a command-tool call, else None. A tool that builds its command
    from its arguments (a custom tool: ``rendered_command(args)``) is a command tool too."""
    key = config.command_tools.get(tool.name)
    if key is None:
        rendered = getattr(tool, "rendered_command", None)
        return str(rendered(args)) if callable(rendered) else None
    value = args.get(key, "")
    return value if isinstance(value, str) else str(value)


def evaluate_approval(
    tool: Tool,
    args: Mapping[str, Any],
    agent: str,
    config: ApprovalConfig,
    state: ApprovalState,
) -> ApprovalVerdict:
    """Decide run / ask / refuse for one call (the table in this module's docstring)."""
    command = command_of(tool, args, config)
    pattern = command if command is not None else "*"
    if command is not None:
        denied = match_deny_pattern(command)
        if denied is not None:
            return ApprovalVerdict(
                action="refuse",
                pattern=pattern,
                rule=f"deny pattern {denied.label!r}",
                reason=f"the command matches the deny pattern {denied.label!r} "
                f"({denied.group}) and is never run. Use a safer command.",
            )
        # exec's dangerous, injection and structure checks (the deny table was matched
        # above, on the same unwrapped views): refused here, before any approval, so the
        # log records a refusal rather than a failed run.
        verdict = analyze_command(command)
        if verdict.action == "deny":
            return ApprovalVerdict(
                action="refuse",
                pattern=pattern,
                rule=f"{verdict.category} pattern {verdict.label!r}",
                reason=verdict.message,
            )
    security, ask = _modes(config, args if command is not None else {})
    dangerous = tool.requires_approval_for(args)
    gated = tool.requires_approval or (command is not None and security == "allowlist")
    if security == "deny" and (command is not None or gated or dangerous):
        return ApprovalVerdict(
            action="refuse",
            pattern=pattern,
            rule="security=deny",
            reason=f"{tool.name} is disabled here (security mode deny). Do without it.",
        )
    if dangerous:
        if ask == "off":
            return ApprovalVerdict(
                action="refuse",
                pattern=pattern,
                rule="never-auto-approve, ask=off",
                reason="these arguments always need a person's approval and approvals are "
                "off. Use a less destructive way.",
            )
        return ApprovalVerdict(
            action="ask",
            pattern=pattern,
            allow_always=False,
            rule="requires_approval_for",
            reason="these arguments are potentially destructive",
        )
    if ask == "always":
        return ApprovalVerdict(
            action="ask",
            pattern=pattern,
            rule="ask=always",
            reason="every call needs approval (ask=always)",
        )
    if not gated:
        return ApprovalVerdict(action="run", pattern=pattern, rule="no approval needed")
    found = state.allowlisted(agent, tool.name, pattern)
    if found is not None or _safe_bin(command, config):
        rule = f"allowlist {found.pattern!r}" if found is not None else "safe bin"
        return ApprovalVerdict(action="run", pattern=pattern, rule=rule)
    if ask == "off":
        if security == "allowlist":
            return ApprovalVerdict(
                action="refuse",
                pattern=pattern,
                rule="security=allowlist, ask=off",
                reason="this call is not in the approved list and approvals are off. Use an "
                "approved command or ask the user to approve it.",
            )
        return ApprovalVerdict(action="run", pattern=pattern, rule="ask=off")
    why = "the tool requires approval" if tool.requires_approval else "not in the allowlist"
    return ApprovalVerdict(action="ask", pattern=pattern, rule=f"ask={ask}", reason=why)


def _modes(config: ApprovalConfig, args: Mapping[str, Any]) -> tuple[str, str]:
    security, ask = config.security, config.ask
    requested_security, requested_ask = args.get("security"), args.get("ask")
    if requested_security in _SECURITY:
        security = min(security, requested_security, key=_SECURITY.index)
    if requested_ask in _ASK:
        ask = max(ask, requested_ask, key=_ASK.index)
    return security, ask


def _safe_bin(command: str | None, config: ApprovalConfig) -> bool:
    if not command or not config.safe_bins or _SHELL_META & set(command):
        return False
    words = command.split()
    return bool(words) and words[0] in config.safe_bins


class ApprovalState:
    """Pending approvals and the allowlist, as a fold of tool events.

    The owning actor applies every event it appends (and, on restart, every event of its
    stream); the pipeline only reads. Thread-safe.
    """

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, PendingApproval] = {}
        self._allowlist: dict[tuple[str, str], list[AllowlistEntry]] = {}
        for event in events:
            self.apply(event)

    def apply(self, event: Event) -> None:
        match event:
            case ToolApprovalRequested():
                pending = PendingApproval(
                    call_id=event.call_id,
                    tool=event.tool,
                    agent=event.agent,
                    session_key=event.session_key,
                    reason=event.reason,
                    arguments=event.arguments,
                    arguments_redacted=event.arguments_redacted,
                    pattern=event.pattern,
                    allow_always=event.allow_always,
                    timeout_s=event.timeout_s,
                    expires_at=event.expires_at,
                    user=event.user,
                )
                with self._lock:
                    self._pending[event.call_id] = pending
            case ToolApprovalDecided() | ToolCallRefused() | ToolCallCompleted() | ToolCallFailed():
                with self._lock:
                    self._pending.pop(event.call_id, None)
            case ToolAllowlistChanged():
                self._change(event)
            case _:
                pass

    def _change(self, event: ToolAllowlistChanged) -> None:
        entry = AllowlistEntry(
            agent=event.agent,
            tool=event.tool,
            pattern=event.pattern,
            match=event.match,
            by=event.by,
        )
        with self._lock:
            key = (event.agent, event.tool)
            kept = [
                e
                for e in self._allowlist.get(key, [])
                if (e.pattern, e.match) != (entry.pattern, entry.match)
            ]
            if event.added:
                kept.append(entry)
            self._allowlist[key] = kept

    # -- reads --------------------------------------------------------------------------
    def allowlisted(self, agent: str, tool: str, subject: str) -> AllowlistEntry | None:
        for entry in self._allowlist.get((agent, tool), ()):
            if entry.matches(subject):
                return entry
        return None

    def allowlist(self, agent: str | None = None) -> list[AllowlistEntry]:
        with self._lock:
            entries = [e for group in self._allowlist.values() for e in group]
        return [e for e in entries if agent is None or e.agent == agent]

    def pending(self, session_key: str | None = None) -> list[PendingApproval]:
        with self._lock:
            found = list(self._pending.values())
        return [p for p in found if session_key is None or p.session_key == session_key]

    def get_pending(self, call_id: str) -> PendingApproval | None:
        return self._pending.get(call_id)
