"""What ``exec`` would do with a command, decided without running anything.

    check_command("rm -rf /").action                          # "refuse"
    check_command("git push --force").action                  # "ask"
    check_command("ls -la").action                            # "run"
    check_command("ls", ApprovalConfig(ask="always")).action  # "ask"

The answer comes from the code a real call goes through, in its order: the tool
pipeline's approval step (:func:`tools.approvals.evaluate_approval`: the deny table,
exec's cached :func:`analyze`, the security and ask modes, safe bins) for an ``exec``
tool built from ``exec_config``, then the exec tool's own check before it starts a
process (:func:`analyze` again, which refuses what a configuration without ``exec`` among
its command tools let through). The agent's allowlist is not consulted: a command a
person allowed always for an agent runs there where this answers ``ask``.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from . import approvals as _approvals
from .exec.analysis import CommandCategory, analyze
from .exec.config import ExecConfig
from .exec.tool import ExecTool

__all__ = ["CommandCheck", "check_command"]

#: The modes the exec tool's ``security`` and ``ask`` arguments take (its schema's enums).
_SECURITY = tuple(ExecTool.parameters["properties"]["security"]["enum"])
_ASK = tuple(ExecTool.parameters["properties"]["ask"]["enum"])


class CommandCheck(msgspec.Struct, frozen=True, kw_only=True):
    """What exec would do with one command."""

    #: ``refuse``: never run; ``ask``: run only once a person approves; ``run``: run now.
    action: Literal["refuse", "ask", "run"]
    #: Why, in the words exec tells the model ("" when it runs).
    reason: str = ""
    #: The rule that decided (``deny pattern 'rm -rf'``, ``requires_approval_for``,
    #: ``ask=always``, ``no approval needed``...).
    rule: str = ""
    #: exec's analysis of the command ("" when no pattern matched).
    category: CommandCategory | Literal[""] = ""
    #: The label of the pattern that matched (``rm -rf``, ``curl | sh``...), or "".
    label: str = ""
    #: Whether an ``allow-always`` answer would allow it from then on (``ask`` only).
    allow_always: bool = False


def check_command(
    command: str,
    config: _approvals.ApprovalConfig | None = None,
    *,
    exec_config: ExecConfig | None = None,
    security: str | None = None,
    ask: str | None = None,
) -> CommandCheck:
    """What the ``exec`` tool would do with ``command`` under the approval ``config``
    (default ``ApprovalConfig()``; pass ``system.approvals`` or the agent's own) and
    ``exec_config`` (its ``requires_approval``), without running it. ``security`` and
    ``ask`` are the call's own arguments of those names, which can only tighten the
    configured modes.

    Raises:
        TypeError: ``command`` is not a str, ``config`` not an ``ApprovalConfig`` or
            ``exec_config`` not an ``ExecConfig``.
        ValueError: ``command`` is empty or blank (exec refuses it as invalid
            parameters), or ``security`` / ``ask`` is not one of exec's modes.
    """
    if not isinstance(command, str):
        raise TypeError(f"command must be a str, not {type(command).__name__}")
    if not command.strip():
        raise ValueError("command must be a non-empty shell command")
    if config is not None and not isinstance(config, _approvals.ApprovalConfig):
        raise TypeError(f"config must be an ApprovalConfig or None, not {type(config).__name__}")
    if exec_config is not None and not isinstance(exec_config, ExecConfig):
        raise TypeError(
            f"exec_config must be an ExecConfig or None, not {type(exec_config).__name__}"
        )
    args = {"command": command}
    for name, value, modes in (("security", security, _SECURITY), ("ask", ask, _ASK)):
        if value is not None and value not in modes:
            raise ValueError(f"{name} must be one of {', '.join(modes)} or None, not {value!r}")
        if value is not None:
            args[name] = value
    tool = ExecTool(exec_config)
    verdict = _approvals.evaluate_approval(
        tool,
        args,
        "",
        config or _approvals.ApprovalConfig(),
        _approvals.ApprovalState(),
    )
    analysis = analyze(command)
    if verdict.action != "refuse" and analysis.action == "deny":
        # What ExecTool.execute refuses before starting anything (CommandDenied).
        return CommandCheck(
            action="refuse",
            reason=analysis.message,
            rule=f"{analysis.category} pattern {analysis.label!r}",
            category=analysis.category,
            label=analysis.label,
        )
    return CommandCheck(
        action=verdict.action,
        reason=verdict.reason,
        rule=verdict.rule,
        category=analysis.category,
        label=analysis.label,
        allow_always=verdict.action == "ask" and verdict.allow_always,
    )
