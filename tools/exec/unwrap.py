"""Unwrapping: what a command line really runs, through wrappers and nested shells.

``sh -c '…'``, ``bash -lc``, ``eval``, ``su -c``, ``find -exec``, ``watch``, ``$( )``,
backticks and ``<( )`` hold command lines of their own: they are parsed again, one level
deeper, up to :data:`MAX_DEPTH`; anything deeper is refused rather than guessed. ``env
X=1``, ``nice``, ``nohup``, ``timeout``, ``xargs``, ``sudo``… are stripped so the command
they run is seen; ``;``, ``&&``, ``||``, ``|``, ``&`` and newlines separate commands.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from ..errors import CommandParseError
from .shell import SimpleCommand, Word, lex, split_commands

__all__ = [
    "INTERPRETERS",
    "MAX_DEPTH",
    "SHELLS",
    "WRAPPERS",
    "Invocation",
    "ParsedCommand",
    "parse",
]

#: Levels of nested command lines analyzed (sh -c inside $( ) inside eval...).
MAX_DEPTH = 3

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "csh", "tcsh"})
INTERPRETERS = frozenset(
    {"python", "python2", "python3", "perl", "ruby", "node", "php", "lua", "Rscript", "tclsh"}
)
#: Wrapper -> (options that take a value, positional arguments before the command).
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "nohup": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "ionice": (frozenset({"-c", "-n", "-p", "-t"}), 0),
    "chrt": (frozenset(), 1),
    "taskset": (frozenset(), 1),
    "time": (frozenset({"-f", "-o"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "exec": (frozenset({"-a"}), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "sudo": (frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "pkexec": (frozenset({"--user"}), 0),
    "runuser": (frozenset({"-u", "-g", "-G"}), 0),
    "xargs": (
        frozenset(
            {
                "-I",
                "-n",
                "-P",
                "-d",
                "-L",
                "-s",
                "-a",
                "-E",
                "--max-args",
                "--max-procs",
                "--delimiter",
                "--arg-file",
                "--replace",
            }
        ),
        0,
    ),
    "flock": (frozenset({"-w", "--timeout", "-E"}), 1),
    "strace": (frozenset({"-o", "-e", "-p", "-s", "-u"}), 0),
    "ltrace": (frozenset({"-o", "-e", "-p", "-s", "-u"}), 0),
    "chroot": (frozenset(), 1),
    "unshare": (frozenset(), 0),
    "nsenter": (frozenset({"-t", "--target"}), 0),
    "busybox": (frozenset(), 0),
    "proxychains": (frozenset({"-f"}), 0),
    "torsocks": (frozenset(), 0),
}


class Invocation(NamedTuple):
    """One command as it will run, after wrappers are stripped."""

    argv: list[str]
    #: The command name comes from a variable or a substitution.
    dynamic_name: bool
    redirects: list[tuple[str, str]]
    depth: int
    #: Its position in its pipeline (0: first).
    stage: int
    #: A shell or interpreter that runs what arrives on its standard input.
    runs_stdin: bool
    #: A shell that runs a script produced at run time (``bash <(…)``, ``/dev/stdin``).
    runs_dynamic_script: bool
    #: Wrappers stripped on the way (``env``, ``sudo``…).
    wrappers: list[str]
    #: The words before any wrapper was stripped (unquoted).
    original: list[str]

    @property
    def name(self) -> str:
        return os.path.basename(self.argv[0]) if self.argv else ""

    def text(self) -> str:
        """The command normalized: unquoted words and redirects joined by single blanks."""
        parts = [*self.argv, *(f"{op} {target}" for op, target in self.redirects)]
        return " ".join(parts)


class ParsedCommand(NamedTuple):
    invocations: list[Invocation]
    pipelines: list[list[Invocation]]
    #: Every command line analyzed, with its depth: the original at 0, nested ones deeper.
    sources: list[tuple[int, str]]
    too_deep: bool
    error: str | None


def parse(command: str) -> ParsedCommand:
    """Parse ``command`` and every command line nested in it."""
    state = ParsedCommand([], [], [], False, None)
    too_deep, error = _parse(command, 0, state)
    return state._replace(too_deep=too_deep, error=error)


def _parse(source: str, depth: int, out: ParsedCommand) -> tuple[bool, str | None]:
    out.sources.append((depth, source))
    if depth > MAX_DEPTH:
        return True, None
    try:
        tokens, substitutions = lex(source)
    except CommandParseError as exc:
        return False, str(exc)
    too_deep, error = False, None
    nested: list[str] = list(substitutions)
    pipeline: list[Invocation] = []
    for command in split_commands(tokens):
        invocation, inner = _unwrap(command, depth, len(pipeline))
        nested += inner
        pipeline.append(invocation)
        out.invocations.append(invocation)
        if command.joiner not in ("|", "|&"):
            out.pipelines.append(pipeline)
            pipeline = []
    if pipeline:
        out.pipelines.append(pipeline)
    for body in nested:
        deep, problem = _parse(body, depth + 1, out)
        too_deep, error = too_deep or deep, error or problem
    return too_deep, error


def _skip_options(words: list[Word], takes_value: frozenset[str], positionals: int) -> int:
    """Index of the wrapped command's name in ``words`` (after the wrapper at 0)."""
    i = 1
    while i < len(words):
        text = words[i].text
        if text == "--":
            i += 1
            break
        if text.startswith("-") and len(text) > 1:
            i += 2 if text in takes_value else 1
            continue
        break
    return i + positionals


def _unwrap(command: SimpleCommand, depth: int, stage: int) -> tuple[Invocation, list[str]]:
    words, nested, wrappers = list(command.words), list[str](), list[str]()
    while words:
        while words and _is_assignment(words[0].text):
            words = words[1:]
        if not words:
            break
        name = os.path.basename(words[0].text)
        if name == "env" and any(w.text in ("-S", "--split-string") for w in words[1:]):
            split_at = next(i for i, w in enumerate(words) if w.text in ("-S", "--split-string"))
            words = [Word(t) for w in words[split_at + 1 :] for t in w.text.split()]
            wrappers.append(name)
            continue
        if name in WRAPPERS and not (name == "command" and _has_flag(words, "v", "V")):
            takes_value, positionals = WRAPPERS[name]
            words = words[_skip_options(words, takes_value, positionals) :]
            wrappers.append(name)
            continue
        break
    argv = [w.text for w in words]
    runs_stdin, dynamic = False, False
    name = os.path.basename(argv[0]) if argv else ""
    if name in SHELLS:
        script, runs_stdin, dynamic = _shell_script(argv)
        if script is not None:
            nested.append(script)
        herestrings = [target for op, target in command.redirects if op == "<<<"]
        if runs_stdin and herestrings:
            nested += herestrings
    elif name in INTERPRETERS:
        runs_stdin = len(argv) == 1 or argv[1] == "-"
    elif name in ("eval", "watch") and len(argv) > 1:
        nested.append(" ".join(argv[1:]))
    elif name in ("su", "script", "flock") and "-c" in argv[1:-1]:
        nested.append(argv[argv.index("-c", 1) + 1])
    elif name in ("source", ".") and len(argv) > 1:
        dynamic = argv[1] in ("/dev/stdin", "-") or argv[1].startswith("<(")
    elif name == "find":
        nested += _find_exec(argv)
    invocation = Invocation(
        argv=argv,
        dynamic_name=bool(words) and words[0].expanded,
        redirects=command.redirects,
        depth=depth,
        stage=stage,
        runs_stdin=runs_stdin,
        runs_dynamic_script=dynamic,
        wrappers=wrappers,
        original=[w.text for w in command.words],
    )
    return invocation, nested


def _is_assignment(text: str) -> bool:
    name, eq, _ = text.partition("=")
    return bool(eq) and name.isidentifier()


def _has_flag(words: list[Word], *letters: str) -> bool:
    return any(w.text.startswith("-") and any(x in w.text for x in letters) for w in words[1:3])


def _shell_script(argv: list[str]) -> tuple[str | None, bool, bool]:
    """(the -c script, reads stdin, runs a run-time script) of a shell invocation."""
    i, command_mode = 1, False
    while i < len(argv) and argv[i].startswith(("-", "+")) and argv[i] not in ("-", "--"):
        option = argv[i]
        if option in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if not option.startswith("--") and "c" in option[1:]:
            command_mode = True
        i += 1
    if i < len(argv) and argv[i] == "--":
        i += 1
    if command_mode:
        return (argv[i] if i < len(argv) else ""), False, False
    if i >= len(argv) or argv[i] == "-" or "-s" in argv[1:i]:
        return None, True, False
    script = argv[i]
    return None, False, script in ("/dev/stdin", "/dev/fd/0") or script.startswith("<(")


def _find_exec(argv: list[str]) -> list[str]:
    found: list[str] = []
    for i, word in enumerate(argv):
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next(
                (j for j in range(i + 1, len(argv)) if argv[j] in (";", "+", "\\;")), len(argv)
            )
            found.append(" ".join(argv[i + 1 : end]))
    return found
