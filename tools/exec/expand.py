"""What the shell would make of a word before the patterns look at it: paths spelled
around a pattern (``/etc//passwd``, ``/etc/x/../passwd``), brace expansion
(``/etc/{passwd,hosts}``) and globs (``/etc/pass*``, ``/e?c/shadow``, ``r? -rf /``).

The analysis cannot list the disk, so a glob is compared with what the patterns protect:
a command-name glob with the commands the tables name, an absolute or home path glob with
the sensitive files. Each candidate a word could become yields one more form of the
command for the patterns to match; ordinary globs (``*.py``, ``src/*``) add nothing. In
such a glob a part the shell fills in from a variable or a substitution (``/pr?c/$PPID``)
could be anything, and a ``*`` part of a sensitive path stands for any name (a process:
``1``, ``self``, ``thread-self``).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterator

__all__ = ["GLOB_COMMANDS", "SENSITIVE_PATHS", "expanded_forms"]

#: Commands the tables refuse or ask about by name; a command-name glob matching one of
#: them is read as that command.
GLOB_COMMANDS: tuple[str, ...] = (
    "rm", "sudo", "doas", "su", "pkexec", "eval", "mkfs", "dd", "shutdown", "reboot",
    "poweroff", "halt", "nc", "ncat", "netcat", "socat", "telnet", "curl", "wget", "sh",
    "bash", "base64", "chmod", "chown", "setcap", "insmod", "modprobe", "nsenter", "mount",
    "passwd", "history", "kill", "killall", "pkill", "shred", "crontab", "truncate",
    "git", "docker", "kubectl", "openssl", "mkfifo", "mknod", "pwncat", "python",
    "python3", "perl", "ruby", "php", "node", "lua", "gawk", "zsh",
)  # fmt: skip
#: Files the dangerous patterns protect, as a glob may reach them.
SENSITIVE_PATHS: tuple[str, ...] = (
    "/etc/passwd", "/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/master.passwd",
    "/proc", "/proc/*", "/proc/*/environ", "/proc/*/mem", "/proc/*/maps",
    "/proc/*/task/*/environ", "/dev/sda", "/dev/mem",
    "/dev/tcp/", "/var/run/docker.sock", "/run/docker.sock", "~/.ssh/id_rsa",
    "~/.ssh/id_ed25519", "~/.ssh/authorized_keys", "~/.bash_history", "~/.zsh_history",
    "~/.aws/credentials", "~/.netrc", "~/.git-credentials", "~/.pgpass",
)  # fmt: skip
_GLOB = re.compile(r"[*?\[]")
_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")
_RUN_TIME = re.compile(r"[$`]")
_MAX_FORMS = 64


def expanded_forms(argv: list[str]) -> list[str]:
    """Extra forms of one command (words joined by blanks), one per word that the shell
    would turn into something else; empty when no word would change."""
    forms: list[str] = []
    for i, word in enumerate(argv):
        for candidate in _candidates(word, first=i == 0):
            if candidate != word:
                forms.append(" ".join([*argv[:i], candidate, *argv[i + 1 :]]))
            if len(forms) >= _MAX_FORMS:
                return forms
    return forms


def _candidates(word: str, *, first: bool) -> Iterator[str]:
    for spelled in _braces(word):
        yield spelled
        if "/" in spelled:
            yield (normal := _normal_path(spelled))
        else:
            normal = spelled
        if not _GLOB.search(normal):
            continue
        if first:
            base = posixpath.basename(normal)
            yield from (n for n in GLOB_COMMANDS if fnmatch.fnmatchcase(n, base))
        if normal.startswith(("/", "~")):
            yield from (p for p in SENSITIVE_PATHS if _glob_reaches(normal, p))


def _braces(word: str) -> list[str]:
    """``a{b,c}d`` → ``abd``, ``acd`` (nested and repeated groups, bounded)."""
    found: list[str] = []
    pending = [word]
    while pending and len(found) < _MAX_FORMS:
        current = pending.pop()
        match = _BRACE.search(current)
        if match is None:
            found.append(current)
            continue
        head, tail = current[: match.start()], current[match.end() :]
        pending += [head + part + tail for part in match.group(1).split(",")]
    return found or [word]


def _normal_path(path: str) -> str:
    """``/etc//x/../passwd`` → ``/etc/passwd``; a trailing ``/`` is kept."""
    normal = posixpath.normpath(path)
    if normal.startswith("//"):
        normal = "/" + normal.lstrip("/")
    return normal + "/" if path.endswith("/") and normal != "/" else normal


def _glob_reaches(pattern: str, path: str) -> bool:
    """Could ``pattern`` name ``path``? Compared component by component, as the shell
    does (``*`` never crosses a ``/``)."""
    parts, targets = pattern.rstrip("/").split("/"), path.rstrip("/").split("/")
    return len(parts) == len(targets) and all(
        _component_matches(p, t) for p, t in zip(parts, targets, strict=True)
    )


def _component_matches(pattern: str, name: str) -> bool:
    """The shell's rule: a glob reaches a dot file only when it starts with a dot. A
    ``*`` name (any process) and a part filled in at run time (``$PPID``) match any."""
    if name == "*" or _RUN_TIME.search(pattern):
        return bool(pattern)
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatch.fnmatchcase(name, pattern)
