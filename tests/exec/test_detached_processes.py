"""Processes that leave the command's process group and tree (``setsid``, a double fork,
``nohup … &``) still die with the run: every process a run starts carries the run's
``CLAWLOG_RUN_ID``, and when the run ends whatever still carries it is killed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clawlog.tools.errors import CommandTimedOut
from clawlog.tools.exec import ExecTool, ProcessRegistry

from .support import alive, context

#: Detaches three ways, each writing the pid of what it left behind.
DETACH = (
    "echo run:$CLAWLOG_RUN_ID; "
    "setsid sleep 300 & echo $! > setsid; "
    "(setsid sleep 300 & echo $! > double_fork); "
    "nohup sleep 300 >/dev/null 2>&1 & echo $! > nohup; "
)
LEFT_BEHIND = ("setsid", "double_fork", "nohup")


def carrying(run_id: str) -> list[int]:
    """Live processes whose environment holds ``CLAWLOG_RUN_ID=run_id``."""
    marker = f"CLAWLOG_RUN_ID={run_id}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0") and alive(int(entry)):
            found.append(int(entry))
    return found


def assert_nothing_left(root: Path, run_id: str) -> None:
    for name in LEFT_BEHIND:
        assert not alive(int((root / name).read_text())), name
    assert run_id.startswith("run:") and run_id != "run:", "no CLAWLOG_RUN_ID"
    run_id = run_id.removeprefix("run:")
    assert carrying(run_id) == []


async def test_a_finished_command_leaves_no_detached_process(root: Path) -> None:
    result = await ExecTool().execute(context(root), {"command": DETACH + "echo done"})
    lines = result.for_llm.splitlines()
    assert lines[1:] == ["done", "[exit code 0]"]
    assert_nothing_left(root, lines[0])


async def test_a_timed_out_command_leaves_no_detached_process(root: Path) -> None:
    # 3 s: the detached processes are started and their pids written well before it.
    with pytest.raises(CommandTimedOut, match=r"timed out after 3 s") as raised:
        await ExecTool().execute(
            context(root), {"command": DETACH + "echo started; sleep 60", "timeout": 3}
        )
    output = str(raised.value).split("output before it was killed:\n", 1)[1]
    assert_nothing_left(root, output.splitlines()[0])


async def test_closing_the_registry_kills_what_a_background_run_detached(root: Path) -> None:
    registry = ProcessRegistry()
    ctx = context(root)
    started = await ExecTool(processes=registry).execute(
        ctx, {"command": DETACH + "echo started; sleep 60", "background": True}
    )
    output = registry.get(ctx.session_id, started.details["process_id"]).run.output
    while "started\n" not in output.text():
        assert not output.closed, output.text()
        await output.wait_for(output.total)
    run_id = output.text().splitlines()[0]
    await registry.aclose()
    assert_nothing_left(root, run_id)


async def test_a_run_cannot_choose_its_own_run_id(root: Path) -> None:
    result = await ExecTool().execute(
        context(root), {"command": "echo run:$CLAWLOG_RUN_ID", "env": {"CLAWLOG_RUN_ID": "mine"}}
    )
    assert result.for_llm.splitlines()[0] not in ("run:", "run:mine")
