"""Background runs and the process tool: background / yieldMs, status, poll, input, signal,
kill; output and exit recorded as events on the session's stream."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from clawlog.events import EventStore
from clawlog.events.domain.workspace import ProcessExited, ProcessOutput, ProcessStarted
from clawlog.tools.errors import ProcessFinished, ProcessLimit, UnknownProcess
from clawlog.tools.exec import ExecConfig, ExecTool, ProcessRegistry, ProcessTool, exec_tools

from .support import StoreRecorder, alive, context

STREAM = "session/main/s1"


def tools(recorder: StoreRecorder, **config: object) -> tuple[ExecTool, ProcessTool]:
    exec_tool, process_tool = exec_tools(ExecConfig(**config), record=recorder)  # type: ignore[arg-type]
    return exec_tool, process_tool  # type: ignore[return-value]


async def test_a_background_run_is_polled_fed_and_recorded(
    root: Path, recorder: StoreRecorder, store: EventStore
) -> None:
    exec_tool, process = tools(recorder)
    ctx = context(root)
    started = await exec_tool.execute(
        ctx, {"command": "echo ready; read name; echo hello $name; exit 4", "background": True}
    )
    pid = started.details["process_id"]
    assert started.for_llm.startswith(f"The command is running in the background as process {pid}")
    fed = await process.execute(ctx, {"action": "input", "processId": pid, "input": "Ada\n"})
    assert fed.for_llm == f"Wrote 4 characters to {pid}."
    seen = started.for_llm
    last = await process.execute(ctx, {"action": "poll", "processId": pid, "waitMs": 10_000})
    seen += last.for_llm
    while last.details["running"]:
        last = await process.execute(ctx, {"action": "poll", "processId": pid, "waitMs": 10_000})
        seen += last.for_llm
    assert "ready" in seen and "hello Ada" in seen and last.for_llm.endswith("[exit code 4]")
    events = [r.event for r in await store.read_stream(STREAM)]
    assert isinstance(events[0], ProcessStarted)
    assert isinstance(events[-1], ProcessExited) and events[-1].exit_code == 4
    assert events[-1].reason == "exited"
    recorded = "".join(e.text for e in events if isinstance(e, ProcessOutput))
    assert recorded == "ready\nhello Ada\n"
    assert "process.input" in await recorder.types(STREAM)
    again = await process.execute(ctx, {"action": "poll", "processId": pid})
    assert again.for_llm == "(no new output)\n[exit code 4]"
    with pytest.raises(ProcessFinished):
        await process.execute(ctx, {"action": "input", "processId": pid, "input": "x"})


async def test_yield_ms_returns_a_quick_command_normally(
    root: Path, recorder: StoreRecorder
) -> None:
    exec_tool, _ = tools(recorder)
    result = await exec_tool.execute(context(root), {"command": "echo quick", "yieldMs": 10_000})
    assert result.for_llm == "quick\n[exit code 0]" and "process_id" not in result.details
    assert await recorder.types(STREAM) == []


async def test_yield_ms_moves_a_slow_command_to_the_background(
    root: Path, recorder: StoreRecorder
) -> None:
    exec_tool, process = tools(recorder)
    ctx = context(root)
    os.mkfifo(root / "gate")
    # "waiting" must be out before the yield: 2 s for a shell's echo is only a hang.
    result = await exec_tool.execute(ctx, {"command": "echo waiting; cat gate", "yieldMs": 2000})
    pid = result.details["process_id"]
    assert "Output so far:\nwaiting" in result.for_llm
    (root / "gate").write_text("opened\n")
    last = await process.execute(ctx, {"action": "poll", "processId": pid, "waitMs": 10_000})
    while last.details["running"]:
        last = await process.execute(ctx, {"action": "poll", "processId": pid, "waitMs": 10_000})
    assert last.details["exit_code"] == 0


async def test_signal_and_kill_reach_the_whole_group(
    root: Path, recorder: StoreRecorder, store: EventStore
) -> None:
    exec_tool, process = tools(recorder)
    ctx = context(root)
    os.mkfifo(root / "armed")
    command = "trap 'echo bye; exit 0' TERM; sleep 60 & echo $! > child; echo yes > armed; wait"
    one = await exec_tool.execute(ctx, {"command": command, "background": True})
    pid = one.details["process_id"]
    assert await asyncio.to_thread((root / "armed").read_text) == "yes\n"
    child = int((root / "child").read_text())
    sent = await process.execute(ctx, {"action": "signal", "processId": pid, "signal": "SIGTERM"})
    assert sent.for_llm.startswith("Sent SIGTERM")
    done = await process.execute(ctx, {"action": "poll", "processId": pid, "waitMs": 10_000})
    while done.details["running"]:
        done = await process.execute(ctx, {"action": "poll", "processId": pid, "waitMs": 10_000})
    assert not alive(child)
    two = await exec_tool.execute(ctx, {"command": "echo $$; sleep 60", "background": True})
    killed = await process.execute(ctx, {"action": "kill", "processId": two.details["process_id"]})
    assert killed.for_llm.startswith(f"Killed {two.details['process_id']}.")
    assert killed.details["reason"] == "killed" and killed.details["exit_code"] == -9
    exits = [r.event for r in await store.read_stream(STREAM) if r.type == "process.exited"]
    assert [e.reason for e in exits] == ["exited", "killed"]  # type: ignore[union-attr]


async def test_a_background_run_times_out_and_is_killed(
    root: Path, recorder: StoreRecorder, store: EventStore
) -> None:
    exec_tool, _ = tools(recorder)
    ctx = context(root)
    result = await exec_tool.execute(ctx, {"command": "sleep 60", "background": True, "timeout": 1})
    managed = exec_tool.processes.get(ctx.session_id, result.details["process_id"])
    assert managed.watcher is not None
    await managed.watcher
    assert managed.reason == "timeout"
    exited = (await store.read_stream(STREAM))[-1].event
    assert isinstance(exited, ProcessExited) and exited.reason == "timeout"


async def test_status_lists_only_this_sessions_processes(
    root: Path, recorder: StoreRecorder
) -> None:
    exec_tool, process = tools(recorder)
    mine, theirs = context(root), context(root, session_key="s2")
    result = await exec_tool.execute(mine, {"command": "sleep 60", "background": True})
    pid = result.details["process_id"]
    listing = await process.execute(mine, {"action": "status"})
    assert listing.for_llm.startswith(f"{pid} [host] running")
    assert (
        await process.execute(theirs, {"action": "status"})
    ).for_llm == "No background processes."
    with pytest.raises(UnknownProcess):
        await process.execute(theirs, {"action": "kill", "processId": pid})
    await exec_tool.processes.close_session(mine.session_id)
    assert (await process.execute(mine, {"action": "status"})).for_llm == "No background processes."


async def test_pending_output_is_capped_at_10k(root: Path, recorder: StoreRecorder) -> None:
    exec_tool, process = tools(recorder)
    ctx = context(root)
    os.mkfifo(root / "gate")
    command = "cat gate; head -c 50000 /dev/zero | tr '\\0' b; echo; echo END"
    result = await exec_tool.execute(ctx, {"command": command, "background": True})
    pid = result.details["process_id"]
    (root / "gate").write_text("go\n")
    managed = exec_tool.processes.get(ctx.session_id, pid)
    assert managed.watcher is not None
    await managed.watcher
    polled = await process.execute(ctx, {"action": "poll", "processId": pid})
    assert len(polled.for_llm) < 10_200 and polled.truncated and "END" in polled.for_llm


async def test_a_session_may_run_only_so_many_processes(
    root: Path, recorder: StoreRecorder
) -> None:
    exec_tool, _ = tools(recorder, max_processes_per_session=2)
    ctx = context(root)
    for _ in range(2):
        await exec_tool.execute(ctx, {"command": "sleep 60", "background": True})
    with pytest.raises(ProcessLimit, match="already has 2 background processes"):
        await exec_tool.execute(ctx, {"command": "echo $$ > third; sleep 60", "background": True})
    assert not (root / "third").exists()  # refused before it started
    await exec_tool.processes.aclose()


async def test_closing_the_registry_kills_everything(root: Path) -> None:
    registry = ProcessRegistry()
    exec_tool = ExecTool(processes=registry)
    ctx = context(root)
    result = await exec_tool.execute(ctx, {"command": "echo $$; sleep 60", "background": True})
    managed = registry.get(ctx.session_id, result.details["process_id"])
    leader = None
    while leader is None:
        await managed.run.output.wait_for(0)
        text = managed.run.output.text()
        leader = int(text.split()[0]) if "\n" in text else None
    await registry.aclose()
    await registry.aclose()  # safe twice
    assert not alive(leader)
    status = await ProcessTool(registry).execute(ctx, {"action": "status"})
    assert status.for_llm == "No background processes."


def test_process_started_names_the_session() -> None:
    event = ProcessStarted(process_id="proc_1", command="ls", agent="a", session_key="s")
    assert event.host == "host" and event.workdir == ""
