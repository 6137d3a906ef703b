"""A running command, wherever it runs: the seam between exec and its hosts.

:mod:`tools.exec.host` runs commands on this machine; :mod:`tools.sandbox` in a Docker
container. Both give a :class:`RunningProcess`; the exec tool and the process registry
only use this protocol.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from typing import Protocol

from clawlog.events.domain.workspace import ProcessHost

from .output import OutputBuffer

__all__ = ["RunningProcess", "SandboxRunner"]


class RunningProcess(Protocol):
    host: ProcessHost
    output: OutputBuffer

    @property
    def returncode(self) -> int | None:
        """The exit code once finished (negative: killed by that signal)."""
        ...

    async def wait(self) -> int:
        """Wait for the end; the output is complete (closed) when this returns."""
        ...

    async def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the whole process group."""
        ...

    async def kill(self) -> None:
        """Kill the process group and everything it started, then reap it."""
        ...

    async def write(self, text: str, eof: bool = False) -> None:
        """Write to standard input (and close it when ``eof``)."""
        ...


class SandboxRunner(Protocol):
    """What exec needs from a sandbox (implemented by :class:`tools.sandbox.SandboxManager`)."""

    @property
    def container_root(self) -> str:
        """Where the workspace is mounted in the container."""
        ...

    @property
    def workspace_access(self) -> str:
        """``ro`` or ``rw``."""
        ...

    async def start(
        self,
        key: str,
        workspace: str,
        command: str,
        *,
        workdir: str,
        env: Mapping[str, str],
        stdin: bool = False,
    ) -> RunningProcess:
        """Start ``command`` with ``sh -c`` in the container of ``key`` (created on first
        use with ``workspace`` mounted). Raises :class:`tools.SandboxError` when the
        sandbox cannot be used; the command has then not run."""
        ...
