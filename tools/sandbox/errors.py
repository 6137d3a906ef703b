"""Errors of the Docker sandbox. Docker and requests errors are translated here, at the
boundary (``raise SandboxUnavailable(...) from exc``).

SandboxFailure                 root; a tools.SandboxError (kind ``sandbox``)
 ├── SandboxUnavailable        the engine, the image or the container cannot be used; the
 │                             command did not run (exec may fall back to the host)
 └── SandboxClosed             the manager was closed
"""

from __future__ import annotations

from ..errors import SandboxError

__all__ = ["SandboxClosed", "SandboxFailure", "SandboxUnavailable"]


class SandboxFailure(SandboxError):
    """Root of the sandbox's errors."""


class SandboxUnavailable(SandboxFailure):
    pass


class SandboxClosed(SandboxFailure):
    pass
