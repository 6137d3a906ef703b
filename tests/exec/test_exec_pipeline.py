"""exec inside the tool pipeline: a wrapped deny pattern is refused at approval with the
seed's wording, a wrapped dangerous command with exec's own analysis, never-auto-approve
commands wait for a person, and a sandbox that cannot be used is refused or replaced by
the host, recorded either way."""

from __future__ import annotations

from pathlib import Path

from clawlog.events import EventStore
from clawlog.events.domain.tool import ToolCallRefused
from clawlog.events.domain.workspace import SandboxSkipped
from clawlog.tools import ToolPipeline, ToolRegistry
from clawlog.tools.decisions import NeedsApproval
from clawlog.tools.driver import StoreSink, run_tool_call
from clawlog.tools.exec import ExecConfig, exec_tools
from clawlog.tools.sandbox import SandboxConfig, SandboxManager

from .support import StoreRecorder, context


async def test_a_wrapped_deny_pattern_is_refused_with_the_seed_wording(
    root: Path, store: EventStore
) -> None:
    pipeline = ToolPipeline(ToolRegistry(exec_tools()))
    sink = StoreSink(store, "session/main/s1")
    result = await run_tool_call(
        pipeline,
        context(root),
        "exec",
        {"command": "touch ran; sh -c 'r''m -rf /'"},
        sink,
        call_id="c1",
    )
    assert result.is_error and result.error_kind == "not_authorized"
    assert "matches the deny pattern 'rm -rf' (destructive file ops)" in result.for_llm
    types = [e.type for e in await store.read_stream("session/main/s1")]
    assert types == ["tool.call_requested", "tool.call_refused"]  # never started
    refused = (await store.read_stream("session/main/s1"))[-1].event
    assert isinstance(refused, ToolCallRefused) and refused.step == "approval"
    assert refused.rule == "deny pattern 'rm -rf'"
    assert not (root / "ran").exists()


async def test_a_wrapped_dangerous_command_is_refused_by_the_exec_analysis(
    root: Path, store: EventStore
) -> None:
    pipeline = ToolPipeline(ToolRegistry(exec_tools()))
    result = await run_tool_call(
        pipeline,
        context(root),
        "exec",
        {"command": "touch ran; sh -c 'cat /proc/$PPID/environ'"},
        StoreSink(store, "session/main/s1"),
        call_id="c1",
    )
    assert result.is_error and "command blocked by safety policy" in result.for_llm
    refused = (await store.read_stream("session/main/s1"))[-1].event
    assert isinstance(refused, ToolCallRefused) and refused.step == "approval"
    assert refused.rule == "dangerous pattern '/proc/*/environ'"
    assert not (root / "ran").exists()


async def test_never_auto_approve_commands_wait_for_approval(root: Path) -> None:
    pipeline = ToolPipeline(ToolRegistry(exec_tools()))
    decision = pipeline.begin(context(root), "c1", "exec", {"command": "bash -c 'git push -f'"})
    assert isinstance(decision, NeedsApproval)
    assert decision.request.allow_always is False


def _unreachable() -> SandboxManager:
    return SandboxManager(
        SandboxConfig(docker_host="unix:///nonexistent/docker.sock", api_timeout_s=5)
    )


async def test_an_unavailable_sandbox_refuses_and_records_it(
    root: Path, recorder: StoreRecorder, store: EventStore
) -> None:
    sandbox = _unreachable()
    exec_tool, _ = exec_tools(sandbox=sandbox, record=recorder)
    result = await run_tool_call(
        ToolPipeline(ToolRegistry([exec_tool])),
        context(root),
        "exec",
        {"command": "touch ran"},
        StoreSink(store, "session/main/other"),
    )
    await sandbox.aclose()
    assert result.is_error and result.error_kind == "sandbox"
    assert "the sandbox is configured but not available" in result.for_llm
    assert not (root / "ran").exists()
    recorded = (await store.read_stream("session/main/s1"))[-1].event
    assert isinstance(recorded, SandboxSkipped) and recorded.action == "refused"
    assert "not reachable" in recorded.reason


async def test_an_unavailable_sandbox_falls_back_to_the_host_where_configured(
    root: Path, recorder: StoreRecorder, store: EventStore
) -> None:
    config = ExecConfig(sandbox_fallback="host")
    sandbox = _unreachable()
    exec_tool, _ = exec_tools(config, sandbox=sandbox, record=recorder)
    result = await exec_tool.execute(context(root), {"command": "touch ran; echo on host"})  # type: ignore[attr-defined]
    await sandbox.aclose()
    assert result.for_llm == "on host\n[exit code 0]" and (root / "ran").exists()
    assert (
        result.details["host"] == "host" and "not reachable" in result.details["sandbox_fallback"]
    )
    recorded = (await store.read_stream("session/main/s1"))[-1].event
    assert isinstance(recorded, SandboxSkipped) and recorded.action == "host_fallback"
