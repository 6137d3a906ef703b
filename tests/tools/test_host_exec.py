"""The host exec tool: workspace, cleared environment, exit codes, group kill on timeout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools import ExecutionFailed, InvalidParameters, ToolContext
from tools.host_exec import ExecTool


def ctx(workspace: Path | None) -> ToolContext:
    return ToolContext(agent="a", session_key="s", workspace=str(workspace) if workspace else None)


async def test_runs_in_the_workspace_with_its_exit_code(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    result = await ExecTool().execute(
        ctx(tmp_path), {"command": "pwd; echo hi >&2; exit 3", "workdir": "sub"}
    )
    assert result.for_llm.splitlines() == [str(tmp_path / "sub"), "hi", "[exit code 3]"]
    assert result.is_error and result.details == {"exit_code": 3}


async def test_the_host_environment_is_cleared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAWLOG_SECRET_TOKEN", "s3cr3t")
    result = await ExecTool().execute(ctx(tmp_path), {"command": "env"})
    assert "CLAWLOG_SECRET_TOKEN" not in result.for_llm and "s3cr3t" not in result.for_llm


async def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "pids"
    command = f"sleep 30 & echo $! > {marker}; sleep 30"
    with pytest.raises(ExecutionFailed, match="timed out after 1 s"):
        await ExecTool().execute(ctx(tmp_path), {"command": command, "timeout": 1})
    child = int(marker.read_text())
    assert (
        not Path(f"/proc/{child}").exists()
        or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
    )


async def test_workdir_must_stay_in_the_workspace(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameters, match="path traversal detected"):
        await ExecTool().execute(ctx(tmp_path), {"command": "ls", "workdir": "../.."})
    with pytest.raises(ExecutionFailed, match="no workspace"):
        await ExecTool().execute(ctx(None), {"command": "ls"})
    assert os.listdir(tmp_path) == []
