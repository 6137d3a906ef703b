"""exec on the host: exit codes, the cleared environment, the working directory, refused
commands never running, timeouts and cancellation killing the whole process group, the
output cap."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from clawlog.tools import ExecutionFailed, InvalidParameters, ToolContext
from clawlog.tools.errors import CommandDenied, CommandTimedOut
from clawlog.tools.exec import ExecConfig, ExecTool
from clawlog.tools.workspace import WorkspaceConfig, WorkspaceEnv
from clawlog.tools.workspace.access import user_directory

from .support import alive, context, live_group_members


async def test_the_output_ends_with_the_exit_code(root: Path) -> None:
    result = await ExecTool().execute(context(root), {"command": "echo out; echo err >&2; exit 3"})
    assert result.for_llm == "out\nerr\n[exit code 3]"
    assert result.is_error and result.error_kind == "execution_failed"
    assert result.details["exit_code"] == 3 and result.details["host"] == "host"
    ok = await ExecTool().execute(context(root), {"command": "true"})
    assert ok.for_llm == "[exit code 0]" and not ok.is_error


async def test_the_environment_is_cleared_to_the_allowlist(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    monkeypatch.setenv("DATABASE_PASSWORD", "hunter2")
    monkeypatch.setenv("LANG", "C.UTF-8")
    result = await ExecTool().execute(context(root), {"command": "env"})
    names = {line.split("=", 1)[0] for line in result.for_llm.splitlines()[:-1]}
    assert "OPENAI_API_KEY" not in names and "sk-secret" not in result.for_llm
    assert "hunter2" not in result.for_llm
    assert {"PATH", "HOME", "LANG"} <= names
    assert f"HOME={root.resolve()}" in result.for_llm


async def test_requested_variables_are_checked(root: Path) -> None:
    tool = ExecTool()
    result = await tool.execute(
        context(root), {"command": "echo $GREETING", "env": {"GREETING": "hi"}}
    )
    assert result.for_llm == "hi\n[exit code 0]"
    for name in ("LD_PRELOAD", "BASH_ENV", "PATH", "PYTHONSTARTUP", "NODE_OPTIONS", "BAD-NAME"):
        with pytest.raises(InvalidParameters, match="env"):
            await tool.execute(context(root), {"command": "true", "env": {name: "x"}})


async def test_the_working_directory_stays_in_the_workspace(root: Path, tmp_path: Path) -> None:
    (root / "sub").mkdir()
    (root / "file.txt").write_text("x")
    (root / "out").symlink_to(tmp_path)
    tool = ExecTool()
    here = await tool.execute(context(root), {"command": "pwd", "workdir": "sub"})
    assert here.for_llm == f"{root.resolve()}/sub\n[exit code 0]"
    same = await tool.execute(context(root), {"command": "pwd", "working_dir": "/workspace/sub"})
    assert same.for_llm == here.for_llm
    for workdir, problem in [
        ("..", "path traversal detected"),
        ("/tmp", "path traversal detected"),
        ("out", "path traversal detected"),
        ("file.txt", "not a folder"),
        ("missing", "not a folder"),
    ]:
        with pytest.raises(InvalidParameters, match=problem):
            await tool.execute(context(root), {"command": "pwd", "workdir": workdir})


async def test_without_a_workspace_nothing_runs(root: Path) -> None:
    with pytest.raises(ExecutionFailed, match="no workspace is configured"):
        await ExecTool().execute(
            ToolContext(agent="main", session_key="s1"), {"command": f"touch {root}/ran"}
        )
    assert not (root / "ran").exists()


async def test_each_user_gets_their_own_workspace(root: Path) -> None:
    tool = ExecTool(workspace=WorkspaceEnv(WorkspaceConfig(per_user=True)))
    result = await tool.execute(context(root, user="telegram:42"), {"command": "pwd"})
    assert result.for_llm.splitlines()[0] == str(
        root.resolve() / "users" / user_directory("telegram:42")
    )


@pytest.mark.parametrize(
    "command",
    [
        "touch ran; rm -rf /nonexistent",
        "touch ran && sh -c 'sudo id'",
        "touch ran; echo $(cat /etc/shadow)",
    ],
)
async def test_a_refused_command_never_runs(root: Path, command: str) -> None:
    with pytest.raises(CommandDenied, match=r"^command blocked by safety policy"):
        await ExecTool().execute(context(root), {"command": command})
    assert not (root / "ran").exists()


@pytest.mark.parametrize(
    "command",
    [
        "cat /proc/$PPID/environ",
        "touch ran; cat /proc/$$/environ",
        "cd /proc/$PPID && cat environ",
        "touch ran; sh -c 'cat /pr\"\"oc/thread-self/envir*'",
    ],
)
async def test_the_environment_of_clawlog_cannot_be_read_through_proc(
    root: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    with pytest.raises(CommandDenied, match=r"privilege escalation or access to secrets"):
        await ExecTool().execute(context(root), {"command": command})
    assert not (root / "ran").exists()


async def test_harmless_proc_files_can_still_be_read(root: Path) -> None:
    result = await ExecTool().execute(
        context(root), {"command": "grep -c processor /proc/cpuinfo; head -1 /proc/meminfo"}
    )
    count, meminfo, code = result.for_llm.splitlines()
    assert int(count) >= 1 and meminfo.startswith("MemTotal:") and code == "[exit code 0]"


async def test_never_auto_approve_commands_ask_for_approval() -> None:
    tool = ExecTool()
    assert tool.requires_approval_for({"command": "git push --force"})
    assert tool.requires_approval_for({"command": "sh -c 'DROP TABLE x' | psql"})
    assert not tool.requires_approval_for({"command": "git status"})
    assert ExecTool(ExecConfig(requires_approval=True)).requires_approval


async def test_a_timeout_kills_the_whole_process_group(root: Path) -> None:
    command = (
        "echo $$ > leader; sleep 60 & echo $! > child; "
        "(sleep 60 & echo $! > grandchild; wait) & "
        "setsid sleep 60 & echo $! > escaped; "
        "echo started; sleep 60"
    )
    # 3 s: every process is started and has written its pid well before the timeout.
    with pytest.raises(CommandTimedOut, match=r"^command timed out after 3 s.*\nstarted"):
        await ExecTool().execute(context(root), {"command": command, "timeout": 3})
    leader = int((root / "leader").read_text())
    assert live_group_members(leader) == []
    for name in ("child", "grandchild", "escaped"):
        assert not alive(int((root / name).read_text())), name


async def test_cancelling_the_call_kills_the_whole_process_group(root: Path) -> None:
    os.mkfifo(root / "ready")
    command = "echo $$ > leader; sleep 60 & echo $! > child; echo go > ready; sleep 60"
    call = asyncio.create_task(ExecTool().execute(context(root), {"command": command}))
    assert await asyncio.to_thread((root / "ready").read_text) == "go\n"
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert live_group_members(int((root / "leader").read_text())) == []
    assert not alive(int((root / "child").read_text()))


async def test_what_a_finished_command_left_running_is_killed(root: Path) -> None:
    result = await ExecTool().execute(context(root), {"command": "sleep 60 & echo $!"})
    child = int(result.for_llm.splitlines()[0])
    assert not alive(child)


async def test_output_is_capped_at_100k_characters_with_head_and_tail(root: Path) -> None:
    command = "echo BEGIN; head -c 300000 /dev/zero | tr '\\0' a; echo; echo END"
    result = await ExecTool().execute(context(root), {"command": command})
    assert len(result.for_llm) <= 100_000 + 20
    assert result.for_llm.startswith("BEGIN\naaa") and result.for_llm.endswith("END\n[exit code 0]")
    assert "characters of output omitted" in result.for_llm and result.truncated


async def test_timeouts_default_per_host_and_are_capped() -> None:
    tool = ExecTool(ExecConfig(host_timeout_s=60, sandbox_timeout_s=300, max_timeout_s=900))
    assert tool._timeout({}, "host") == 60 and tool._timeout({}, "sandbox") == 300
    assert tool._timeout({"timeout": 5000}, "host") == 900
    assert tool.timeout > 900  # the pipeline's own limit never cuts a run short
