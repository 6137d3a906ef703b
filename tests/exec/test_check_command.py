"""check_command answers what exec would do (refuse, ask, run) without running anything,
and the real exec pipeline does exactly that with every row of the table."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from clawlog.events import EventStore
from clawlog.tools import ApprovalConfig, ToolPipeline, ToolRegistry
from clawlog.tools.command_check import CommandCheck, check_command
from clawlog.tools.decisions import ApprovalRequest
from clawlog.tools.driver import StoreSink, run_tool_call
from clawlog.tools.exec import ExecConfig, exec_tools

from .support import context


class Row(NamedTuple):
    command: str
    action: str
    rule: str
    config: ApprovalConfig | None = None
    exec_config: ExecConfig | None = None
    #: The call's own arguments beside the command (``security``, ``ask``).
    modes: dict[str, str] = {}


ROWS = [
    Row("rm -rf /", "refuse", "deny pattern 'rm -rf'"),
    Row("sh -c 'rm -rf /'", "refuse", "deny pattern 'rm -rf'"),
    Row("sudo cat /etc/shadow", "refuse", "dangerous pattern 'sudo'"),
    Row("echo hello", "refuse", "security=deny", ApprovalConfig(security="deny")),
    # Not a command tool for the approval step: exec's own check refuses it.
    Row("rm -rf /", "refuse", "deny pattern 'rm -rf'", ApprovalConfig(command_tools={})),
    Row("git push --force origin main", "ask", "requires_approval_for"),
    Row("echo hello", "ask", "ask=always", ApprovalConfig(ask="always")),
    Row("echo hello", "ask", "ask=on-miss", None, ExecConfig(requires_approval=True)),
    Row("echo hello", "ask", "ask=always", None, None, {"ask": "always"}),
    Row("echo hello", "refuse", "security=deny", None, None, {"security": "deny"}),
    Row("echo hello", "run", "no approval needed"),
    Row("ls", "run", "safe bin", ApprovalConfig(security="allowlist", ask="off", safe_bins=["ls"])),
]
IDS = [f"{row.action}:{row.command}:{row.rule}{row.modes or ''}" for row in ROWS]


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_the_verdict_names_the_outcome_and_the_rule(row: Row) -> None:
    check = check_command(row.command, row.config, exec_config=row.exec_config, **row.modes)
    assert isinstance(check, CommandCheck)
    assert (check.action, check.rule) == (row.action, row.rule)
    assert bool(check.reason) == (row.action != "run")


def test_a_denied_command_carries_the_pattern_and_execs_wording() -> None:
    check = check_command("sh -c 'r''m -rf /'")
    assert (check.category, check.label) == ("deny", "rm -rf")
    assert check.reason == (
        "the command matches the deny pattern 'rm -rf' (destructive file ops) and is never "
        "run. Use a safer command."
    )
    destructive = check_command("git push --force origin main")
    assert (destructive.category, destructive.label) == ("never-auto-approve", "git push --force")
    assert destructive.allow_always is False
    assert check_command("echo hi", ApprovalConfig(ask="always")).allow_always is True


@pytest.mark.parametrize("row", ROWS, ids=IDS)
async def test_the_exec_pipeline_does_what_check_command_says(
    row: Row, root: Path, store: EventStore
) -> None:
    check = check_command(row.command, row.config, exec_config=row.exec_config, **row.modes)
    pipeline = ToolPipeline(ToolRegistry(exec_tools(row.exec_config)), approval_config=row.config)
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> str:
        asked.append(request.reason)
        return "deny"  # an approved destructive command would really run

    result = await run_tool_call(
        pipeline,
        context(root),
        "exec",
        {"command": row.command, **row.modes},
        StoreSink(store, "session/main/s1"),
        approver,
        call_id="c1",
    )
    ran = "exit_code" in result.details
    outcome = "ask" if asked else "run" if ran else "refuse"
    assert outcome == check.action
    if outcome == "ask":
        assert asked == [check.reason]
    elif outcome == "refuse":
        assert result.error_kind == "not_authorized" and check.reason in result.for_llm
    else:
        assert result.details["exit_code"] == 0 and not result.is_error


def test_what_is_not_a_command_is_refused_before_any_check() -> None:
    with pytest.raises(TypeError, match="command must be a str"):
        check_command(["rm", "-rf", "/"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="command must be a non-empty"):
        check_command("   ")
    with pytest.raises(TypeError, match="config must be an ApprovalConfig"):
        check_command("ls", {"security": "deny"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="exec_config must be an ExecConfig"):
        check_command("ls", exec_config=ApprovalConfig())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ask must be one of off, on-miss, always"):
        check_command("ls", ask="sometimes")
