"""Settings of the exec tool (seed 001 §4, seed 002 §4 and §11, seed 004 §4.6)."""

from __future__ import annotations

from typing import Literal

import msgspec

from .env import SAFE_ENV_VARS

__all__ = ["ExecConfig"]


class ExecConfig(msgspec.Struct, frozen=True, kw_only=True):
    #: Default timeouts (seed 001: 60 s on the host, 300 s in the sandbox).
    host_timeout_s: float = 60.0
    sandbox_timeout_s: float = 300.0
    #: The most a call may ask for with ``timeout``.
    max_timeout_s: float = 1800.0
    #: seed 002: 100K characters for a finished run, 10K while it is still running.
    max_output_chars: int = 100_000
    pending_max_output_chars: int = 10_000
    #: With a sandbox configured but not usable: refuse, or run on the host (recorded).
    sandbox_fallback: Literal["refuse", "host"] = "refuse"
    #: IronClaw: every shell call waits for approval (unless allowlisted).
    requires_approval: bool = False
    safe_env: tuple[str, ...] = SAFE_ENV_VARS
    #: seed 002 pathPrepend.
    path_prepend: tuple[str, ...] = ()
    #: seed 002 backgroundMs: yield to the background after this long unless the call
    #: says otherwise (None: wait for the end).
    default_yield_ms: int | None = None
    #: Background processes one session may have running at once.
    max_processes_per_session: int = 8
