"""Shell execution: command analysis, the ``exec`` and ``process`` tools, background runs.

    processes = ProcessRegistry(record, scrub=pipeline.scrubber.scrub)
    tools = exec_tools(ExecConfig(), workspace=env, sandbox=manager, processes=processes)

``record(stream, events)`` appends through the actor owning ``stream`` (the calling
session's ``session/{agent}/{key}``); ``processes.close_session(...)`` at session end and
``processes.aclose()`` at system close kill what is still running.
"""

from __future__ import annotations

from ..base import Tool
from ..workspace.access import WorkspaceEnv
from ..workspace.stores import Recorder
from .analysis import CommandVerdict, analyze
from .config import ExecConfig
from .env import BLOCKED_ENV, SAFE_ENV_VARS
from .patterns import DANGEROUS, DENY, INJECTION, NEVER_AUTO_APPROVE, CommandPattern
from .process_tool import ProcessTool
from .processes import ProcessRegistry
from .runs import SandboxRunner
from .tool import ExecTool

__all__ = [
    "BLOCKED_ENV",
    "DANGEROUS",
    "DENY",
    "INJECTION",
    "NEVER_AUTO_APPROVE",
    "SAFE_ENV_VARS",
    "CommandPattern",
    "CommandVerdict",
    "ExecConfig",
    "ExecTool",
    "ProcessRegistry",
    "ProcessTool",
    "analyze",
    "exec_tools",
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
