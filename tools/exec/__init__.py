"""Shell execution: command analysis, the ``exec`` and ``process`` tools, background runs.

    processes = ProcessRegistry(record, scrub=pipeline.scrubber.scrub)
    tools = exec_tools(ExecConfig(), workspace=env, sandbox=manager, processes=processes)

``record(stream, events)`` appends through the actor owning ``stream`` (the calling
session's ``session/{agent}/{key}``); ``processes.close_session(...)`` at session end and
``processes.aclose()`` at system close kill what is still running.
"""

from __future__ import annotations

from ..base import Tool
from ..errors import (
    CommandDenied,
    CommandTimedOut,
    ExecError,
    ProcessFinished,
    ProcessLimit,
    SandboxRefused,
    UnknownProcess,
)
from ..workspace.access import WorkspaceEnv
from ..workspace.stores import Recorder
from .analysis import CommandVerdict, analyze, match_deny
from .config import ExecConfig
from .env import BLOCKED_ENV, SAFE_ENV_VARS, command_env
from .host import RUN_ID_ENV, HostProcess, kill_tree, sweep_run
from .output import OutputBuffer, clip
from .patterns import DANGEROUS, DENY, INJECTION, NEVER_AUTO_APPROVE, CommandPattern
from .process_tool import ALLOWED_SIGNALS, ProcessTool
from .processes import ManagedProcess, ProcessRegistry, session_stream
from .runs import RunningProcess, SandboxRunner
from .tool import ExecTool
from .unwrap import MAX_DEPTH, Invocation, ParsedCommand, parse

__all__ = [
    "ALLOWED_SIGNALS",
    "BLOCKED_ENV",
    "DANGEROUS",
    "DENY",
    "INJECTION",
    "MAX_DEPTH",
    "NEVER_AUTO_APPROVE",
    "RUN_ID_ENV",
    "SAFE_ENV_VARS",
    "CommandDenied",
    "CommandPattern",
    "CommandTimedOut",
    "CommandVerdict",
    "ExecConfig",
    "ExecError",
    "ExecTool",
    "HostProcess",
    "Invocation",
    "ManagedProcess",
    "OutputBuffer",
    "ParsedCommand",
    "ProcessFinished",
    "ProcessLimit",
    "ProcessRegistry",
    "ProcessTool",
    "RunningProcess",
    "SandboxRefused",
    "SandboxRunner",
    "UnknownProcess",
    "analyze",
    "clip",
    "command_env",
    "exec_tools",
    "kill_tree",
    "match_deny",
    "parse",
    "session_stream",
    "sweep_run",
]


def exec_tools(
    config: ExecConfig | None = None,
    *,
    workspace: WorkspaceEnv | None = None,
    sandbox: SandboxRunner | None = None,
    processes: ProcessRegistry | None = None,
    record: Recorder | None = None,
) -> list[Tool]:
    """``exec`` and ``process`` sharing one process registry."""
    config = config or ExecConfig()
    processes = processes or ProcessRegistry(
        record, max_per_session=config.max_processes_per_session
    )
    exec_tool = ExecTool(
        config, workspace=workspace, sandbox=sandbox, processes=processes, record=record
    )
    process_tool = ProcessTool(processes, pending_max_output_chars=config.pending_max_output_chars)
    return [exec_tool, process_tool]
