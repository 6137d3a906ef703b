"""Command analysis: deny, ask, or allow a shell command before it runs.

The known bypass class of claw tools hides a forbidden command behind quoting, escapes or
wrappers (``r''m -rf /``, ``sh -c "…"``, ``env X=1 …``, ``$(…)``, ``${IFS}``…). So every
pattern of :mod:`tools.exec.patterns` is matched against several forms:

- the raw command text and every nested command line (``sh -c`` bodies, substitutions);
- each command after lexing and unwrapping, words unquoted and joined by single blanks,
  and as written before its wrappers (``sudo``, ``env -S``…) were stripped;
- each command again as the shell would expand its words: paths normalized, braces
  expanded, globs compared with the commands and files the tables name
  (:mod:`tools.exec.expand`: ``/etc/pass*``, ``r? -rf /``);
- each pipeline of those, and the whole command line of them.

The raw text counts too, so a forbidden command that is only mentioned (``echo "rm -rf
/"``, a comment) is refused as well: a false refusal costs a rephrasing, a miss costs the
machine. Structure is checked too: text piped into a shell, a shell running a script made at run
time, nesting deeper than three levels, and text the lexer cannot read are refused; a
command whose name comes from a variable or substitution needs approval.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Literal, NamedTuple

from .expand import expanded_forms
from .patterns import (
    DANGEROUS,
    DENY,
    INJECTION,
    NEVER_AUTO_APPROVE,
    CommandPattern,
    PatternCategory,
)
from .unwrap import MAX_DEPTH, Invocation, ParsedCommand, parse

__all__ = ["CommandCategory", "CommandVerdict", "analyze", "match_deny"]

Action = Literal["allow", "approve", "deny"]
#: What a refused or asked-for command matched: a pattern table, or ``structure`` (a
#: command that cannot be checked: unparseable, nested too deep, a script made at run
#: time).
CommandCategory = Literal[PatternCategory, "structure"]

_WHY = {
    "deny": "a destructive or forbidden command",
    "dangerous": "privilege escalation or access to secrets",
    "injection": "a command-injection or exfiltration pattern",
    "structure": "a command that cannot be checked safely",
    "never-auto-approve": "an irreversible operation",
}
#: What pipes into a shell, and how the seeds name that.
_PRODUCERS: dict[str, tuple[CommandCategory, str]] = {
    "curl": ("deny", "curl | sh"),
    "wget": ("deny", "wget -O - | sh"),
    "base64": ("deny", "base64 -d | sh"),
    "printf": ("injection", "printf | sh"),
    "xxd": ("injection", "xxd | sh"),
    "rev": ("injection", "rev | sh"),
    # a reverse shell: what arrives from the network is run
    **dict.fromkeys(("nc", "ncat", "netcat", "pwncat", "cryptcat", "socat"), ("deny", "nc | sh")),
    "telnet": ("deny", "telnet | sh"),
}


class CommandVerdict(NamedTuple):
    action: Action
    #: "" when allowed.
    category: CommandCategory | Literal[""] = ""
    #: The pattern's label (``rm -rf``, ``curl | sh``…).
    label: str = ""
    #: The form of the command that matched, for audits.
    evidence: str = ""

    @property
    def reason(self) -> str:
        if self.action == "allow":
            return "no pattern matched"
        return f"{_WHY.get(self.category, self.category)} ({self.category} pattern {self.label!r})"

    @property
    def message(self) -> str:
        """What the model is told."""
        if self.action == "deny":
            return (
                f"command blocked by safety policy: it matches {self.reason}. It is never run, "
                "however it is wrapped or quoted; use a safer command."
            )
        if self.action == "approve":
            return f"this command needs a person's approval every time: {self.reason}"
        return "allowed"


@functools.lru_cache(maxsize=256)
def analyze(command: str) -> CommandVerdict:
    """The verdict on one command line: the first deny, else the first approval, else
    allow. Cached: one call is analyzed by the approval step, the approval check and the
    run."""
    if "\x00" in command:
        return CommandVerdict("deny", "injection", "null byte", repr(command[:200]))
    parsed, free, anchored = _prepared(command)
    if parsed.error is not None:
        return CommandVerdict("deny", "structure", f"unparseable: {parsed.error}", command[:200])
    if parsed.too_deep:
        label = f"nested deeper than {MAX_DEPTH} levels"
        return CommandVerdict("deny", "structure", label, command[:200])
    for table in (DENY, DANGEROUS, INJECTION):
        found = _match(table, free, anchored)
        if found is not None:
            return CommandVerdict("deny", found[0].category, found[0].label, found[1])
    structural = _structure(parsed)
    if structural is not None:
        return structural
    found = _match(NEVER_AUTO_APPROVE, free, anchored)
    if found is not None:
        return CommandVerdict("approve", found[0].category, found[0].label, found[1])
    for invocation in parsed.invocations:
        if invocation.dynamic_name:
            label = "command name from a variable or substitution"
            return CommandVerdict("approve", "never-auto-approve", label, invocation.text())
    return CommandVerdict("allow")


def match_deny(command: str) -> tuple[CommandPattern, str] | None:
    """The first pattern of :data:`DENY` that any form of ``command`` matches, with the
    form (the evidence); text piped into a shell by ``curl``, ``wget`` or ``base64``
    counts as their pattern. A command the lexer cannot read is matched as written."""
    parsed, free, anchored = _prepared(command)
    found = _match(DENY, free, anchored)
    if found is not None:
        return found
    structural = _structure(parsed)
    if structural is not None and structural.category == "deny":
        pattern = next(p for p in DENY if p.label == structural.label)
        return pattern, structural.evidence
    return None


@functools.lru_cache(maxsize=256)
def _prepared(command: str) -> tuple[ParsedCommand, tuple[str, ...], tuple[str, ...]]:
    """``command`` parsed, with its forms (shared by :func:`analyze` and
    :func:`match_deny`, which both see every command-tool call)."""
    parsed = parse(command)
    free, anchored = _forms(parsed)
    return parsed, free, anchored


def _forms(parsed: ParsedCommand) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(forms any pattern may match anywhere in, single-command forms for anchored ones)."""
    commands = [inv.text() for inv in parsed.invocations]
    commands += [form for inv in parsed.invocations for form in expanded_forms(inv.argv)]
    # as written: before wrappers were stripped, with the assignments (``D=/pr''oc``)
    wrapped = [" ".join(inv.original) for inv in parsed.invocations if inv.original != inv.argv]
    pipelines = [" | ".join(inv.text() for inv in p) for p in parsed.pipelines]
    free = [source for _, source in parsed.sources] + commands + wrapped + pipelines
    free.append(" ; ".join(pipelines))
    return tuple(dict.fromkeys(free)), tuple(dict.fromkeys(commands))


def _match(
    table: tuple[CommandPattern, ...], free: Sequence[str], anchored: Sequence[str]
) -> tuple[CommandPattern, str] | None:
    for pattern in table:
        forms = anchored if pattern.anchored else free
        for form in forms:
            if not pattern.regex.search(form):
                continue
            if pattern.also is None:
                return pattern, form[:200]
            other = next((v for v in forms if pattern.also.search(v)), None)
            if other is not None:
                return pattern, (form if other == form else f"{form} … {other}")[:200]
            break
    return None


def _structure(parsed: ParsedCommand) -> CommandVerdict | None:
    for pipeline in parsed.pipelines:
        for stage, invocation in enumerate(pipeline):
            if invocation.runs_dynamic_script:
                label = "shell running a script made at run time"
                return CommandVerdict("deny", "structure", label, invocation.text())
            if stage > 0 and invocation.runs_stdin:
                return _piped_into_shell(pipeline[:stage], invocation)
    return None


def _piped_into_shell(producers: list[Invocation], shell: Invocation) -> CommandVerdict:
    evidence = " | ".join(inv.text() for inv in [*producers, shell])[:200]
    for producer in producers:
        if producer.name in _PRODUCERS:
            category, label = _PRODUCERS[producer.name]
            return CommandVerdict("deny", category, label, evidence)
    return CommandVerdict(
        "deny", "injection", f"… | {shell.name} (text piped into a shell)", evidence
    )
