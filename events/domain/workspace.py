"""Workspace state that lives in the log, and the shell processes tools run.

Context files (seed 001 §3: SOUL.md, IDENTITY.md, AGENTS.md, TOOLS.md, HEARTBEAT.md,
USER.md, BOOTSTRAP.md) and memory documents (MEMORY.md, memory.md, memory/*) are not on
disk: ``write_file`` on them becomes one of these events, and their stores
(:mod:`tools.workspace`) are folds of them. ``user == ""`` is the agent-level (global)
scope; otherwise the file belongs to that user. Contents are scrubbed before they are
recorded. By default they live on the agent's stream ``agent/{key}``.

Background shell runs (``exec`` with ``background``/``yieldMs``, then the ``process``
tool) leave, on the calling session's stream::

    process.started → process.output* → [process.input | process.signalled]* → process.exited

and the Docker sandbox records the life of each session container and every time it
could not be used (``sandbox.unavailable``, with what was done instead).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..base import Event

__all__ = [
    "EVENTS",
    "ContainerRemovalReason",
    "ContextFileDeleted",
    "ContextFileWritten",
    "ExitReason",
    "MemoryDocumentDeleted",
    "MemoryDocumentWritten",
    "ProcessExited",
    "ProcessHost",
    "ProcessInput",
    "ProcessOutput",
    "ProcessSignalled",
    "ProcessStarted",
    "SandboxContainerRemoved",
    "SandboxContainerStarted",
    "SandboxSkipped",
    "SandboxSkippedAction",
    "WorkspaceAccess",
]

#: How a kept-running process ended: on its own, by ``process kill``, past its timeout,
#: or by a signal.
ExitReason = Literal["exited", "killed", "timeout", "signalled"]
#: Why a sandbox container was removed.
ContainerRemovalReason = Literal["session_end", "close", "recreate", "timeout_kill"]
#: Where a command runs: on this machine, or in the Docker sandbox.
ProcessHost = Literal["host", "sandbox"]
#: How the sandbox mounts the workspace: read-only or read-write.
WorkspaceAccess = Literal["ro", "rw"]
#: What ran instead when the sandbox could not: nothing (``ExecConfig.sandbox_fallback``
#: ``refuse``), or the command on the host (``host``).
SandboxSkippedAction = Literal["refused", "host_fallback"]


class ContextFileWritten(Event, frozen=True, tag="workspace.context_file_written"):
    """A context file's new content (whole file)."""

    agent: str
    #: One of the seven context file names, e.g. ``SOUL.md``.
    name: str
    content: str
    #: ``""``: the agent-level file; else the per-user copy of that user.
    user: str = ""
    #: The tool call that wrote it, if a tool did.
    call_id: str = ""


class ContextFileDeleted(Event, frozen=True, tag="workspace.context_file_deleted"):
    """The file is gone (writing BOOTSTRAP.md empty deletes it)."""

    agent: str
    name: str
    user: str = ""
    call_id: str = ""


class MemoryDocumentWritten(Event, frozen=True, tag="workspace.memory_document_written"):
    """A memory document's new content; ``.md`` documents are indexed for memory_search."""

    agent: str
    #: ``MEMORY.md``, ``memory.md`` or ``memory/…`` relative to the workspace.
    path: str
    content: str
    user: str = ""
    call_id: str = ""


class MemoryDocumentDeleted(Event, frozen=True, tag="workspace.memory_document_deleted"):
    agent: str
    path: str
    user: str = ""
    call_id: str = ""


class ProcessStarted(Event, frozen=True, tag="process.started"):
    """A shell command kept running after its ``exec`` call returned."""

    process_id: str
    command: str
    agent: str = ""
    session_key: str = ""
    host: ProcessHost = "host"
    #: Working directory relative to the workspace (``""`` is its root).
    workdir: str = ""
    call_id: str = ""
    timeout_s: float = 0.0


class ProcessOutput(Event, frozen=True, tag="process.output"):
    """A chunk of combined stdout/stderr, in order; ``offset`` counts characters before it."""

    process_id: str
    text: str
    offset: int = 0


class ProcessInput(Event, frozen=True, tag="process.input"):
    """Characters written to the process's stdin (the text itself is not recorded)."""

    process_id: str
    chars: int
    eof: bool = False
    call_id: str = ""


class ProcessSignalled(Event, frozen=True, tag="process.signalled"):
    process_id: str
    #: ``SIGTERM``, ``SIGKILL``…
    signal: str
    call_id: str = ""


class ProcessExited(Event, frozen=True, tag="process.exited"):
    """The run ended, for ``reason``."""

    process_id: str
    exit_code: int | None
    reason: ExitReason = "exited"
    duration_ms: float = 0.0
    #: Characters of output in total, and whether the recorded output stops short of it.
    output_chars: int = 0
    truncated: bool = False


class SandboxContainerStarted(Event, frozen=True, tag="sandbox.container_started"):
    sandbox_key: str
    container_id: str
    image: str
    workspace_access: WorkspaceAccess = "ro"
    network: str = "none"


class SandboxContainerRemoved(Event, frozen=True, tag="sandbox.container_removed"):
    sandbox_key: str
    container_id: str
    #: ``""`` only as the default of an event without one (never written).
    reason: ContainerRemovalReason | Literal[""] = ""


class SandboxSkipped(Event, frozen=True, tag="sandbox.unavailable"):
    """The sandbox was configured but could not run a command; ``action`` says what
    happened instead."""

    sandbox_key: str
    reason: str
    action: SandboxSkippedAction
    call_id: str = ""
    tool: str = "exec"
    details: dict[str, str] = msgspec.field(default_factory=dict)


EVENTS: tuple[type[Event], ...] = (
    ContextFileWritten,
    ContextFileDeleted,
    MemoryDocumentWritten,
    MemoryDocumentDeleted,
    ProcessStarted,
    ProcessOutput,
    ProcessInput,
    ProcessSignalled,
    ProcessExited,
    SandboxContainerStarted,
    SandboxContainerRemoved,
    SandboxSkipped,
)
