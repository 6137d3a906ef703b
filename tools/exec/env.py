"""The environment of a command: cleared, then a safe allowlist (seed 004 §4.6
``env_clear()`` + ``SAFE_ENV_VARS``); secrets such as ``API_KEY`` never reach a shell."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from ..errors import InvalidParameters

__all__ = ["BLOCKED_ENV", "SAFE_ENV_VARS", "command_env"]

#: Host variables a command may see (everything else is dropped).
SAFE_ENV_VARS: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
    "LC_COLLATE", "LC_MESSAGES", "LC_MONETARY", "LC_NUMERIC", "LC_TIME", "TERM", "TZ",
    "TMPDIR", "COLUMNS", "LINES", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "CLICOLOR",
    "EDITOR", "VISUAL", "PAGER", "HOSTNAME", "PWD", "SHLVL", "CI",
)  # fmt: skip
#: Variables a call may not set: they make programs load or run other code.
BLOCKED_ENV = re.compile(
    r"^(?:LD_\w*|DYLD_\w*|BASH_ENV|ENV|BASH_FUNC_\w*|PROMPT_COMMAND|PS4|IFS|SHELLOPTS|"
    r"BASHOPTS|PATH|HOME|PYTHONSTARTUP|PYTHONPATH|PYTHONHOME|PERL5OPT|PERL5LIB|PERLLIB|"
    r"RUBYOPT|RUBYLIB|NODE_OPTIONS|NODE_PATH|GIT_SSH|GIT_SSH_COMMAND|GIT_EXEC_PATH|"
    r"GIT_CONFIG\w*|GIT_PAGER|GIT_EDITOR|EDITOR|VISUAL|PAGER|ZDOTDIR|TMPDIR)$"
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def requested_env(requested: Mapping[str, object] | None) -> dict[str, str]:
    """The variables a call asked for, checked."""
    env: dict[str, str] = {}
    for key, value in (requested or {}).items():
        if not isinstance(key, str) or _NAME.fullmatch(key) is None:
            raise InvalidParameters(f"env: {key!r} is not a valid variable name")
        if BLOCKED_ENV.match(key):
            raise InvalidParameters(
                f"env: {key} cannot be set by a tool call (it changes which code programs run)"
            )
        text = value if isinstance(value, str) else str(value)
        if "\x00" in text:
            raise InvalidParameters(f"env: the value of {key} contains a null byte")
        env[key] = text
    return env


def command_env(
    *,
    home: str,
    cwd: str,
    requested: Mapping[str, object] | None = None,
    allow: tuple[str, ...] = SAFE_ENV_VARS,
    path_prepend: tuple[str, ...] = (),
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The host environment cleared to ``allow``, HOME set to ``home`` (the workspace,
    so ``~`` stays inside it), PATH with ``path_prepend`` in front, then the requested
    variables."""
    source = os.environ if source is None else source
    env = {key: source[key] for key in allow if key in source}
    env["HOME"] = home
    env["PWD"] = cwd
    path = env.get("PATH") or DEFAULT_PATH
    env["PATH"] = ":".join([*path_prepend, path]) if path_prepend else path
    env.update(requested_env(requested))
    return env
