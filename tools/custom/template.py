"""Command templates: POSIX shell text with ``{{.key}}`` placeholders (seed 001 §13), each
argument reaching the command as exactly one literal word.

How a value gets there: the template is read once, the way ``/bin/sh`` reads it (quotes,
escapes, ``$(…)``, backquotes, ``${…}``, ``$((…))``, comments, here-documents), and each
placeholder becomes a reference to a positional parameter: ``"${1}"`` where it stands
outside quotes, ``${1}`` inside a double-quoted string. The command runs as
``/bin/sh -c SCRIPT sh VALUE1 VALUE2 …``: the values are never part of the text the shell
parses, and a quoted parameter expansion is neither split into words nor globbed nor
expanded again, whatever the value holds (quotes, ``;``, ``$()``, backquotes, newlines,
``*``, a leading ``-``, the empty string). This is why the runner always goes through
``sh -c`` rather than executing an argv directly when the template has no shell syntax:
one path, the template keeps pipes and redirections, and it is the exec tool's own
process runner (:class:`tools.exec.host.HostProcess`). A value starting with ``-`` still
arrives as one word; whether the program then reads it as an option is the program's
business (put ``--`` before it in the template where that matters).

Where a reference could not keep a value one word, the template is refused when it is
defined, with what to change: a placeholder inside single quotes (it would not be
expanded), inside backquotes, ``${…}`` or ``$((…))``, in a comment, after a here-document
operator, or right after a ``$``. Any other ``{{`` is refused too: only ``{{.name}}``
placeholders exist.

An argument that is absent (optional, no default) makes a placeholder that stands as a
whole word of its own disappear, word and all (``dig +short {{.type}} {{.domain}}``
without ``type`` runs ``dig +short example.com``); a placeholder that is part of a word
becomes the empty string there.

The *display form* (:attr:`Rendering.display`) is the same command with each value
written in: shell-quoted (``shlex.quote``) outside quotes, backslash-escaped inside double
quotes. Run by ``sh -c`` it would do what the script does; it is what the exec deny table
and the approval rules judge, what a person approving the call reads, and what an
allow-always answer adds to the allowlist.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from typing import NamedTuple

from ..errors import CustomToolTypeError, InvalidCustomTool

__all__ = ["TEMPLATE_SHELL", "CommandTemplate", "Rendering", "Slot"]

_PLACEHOLDER = re.compile(r"\{\{\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
#: Characters that end a word in the shell's grammar (blanks and operators).
_WORD_END = frozenset(" \t\n;&|()<>")
_DQ_SPECIAL = frozenset('"\\$`')
#: Characters of a template: it is one shell script of at most this many characters.
MAX_TEMPLATE_CHARS = 16_384
#: The shell that runs a template: dash where it is installed (Debian's and Ubuntu's
#: ``/bin/sh``; macOS ships it too), else ``/bin/sh``. Not bash: bash evaluates a quoted
#: ``"${1}"`` as arithmetic in ``[[ … -eq … ]]``, ``(( ))``, ``let``, ``$[ ]``,
#: ``declare -i`` and ``$((x))`` after ``x="${1}"``, where ``a[$(cmd)]`` runs ``cmd``,
#: even under ``--posix``. Those constructs are also refused in a template
#: (:data:`_ARITHMETIC`), so a template defined here is as safe on a host whose
#: ``/bin/sh`` is bash.
TEMPLATE_SHELL = "/bin/dash" if os.path.exists("/bin/dash") else "/bin/sh"
#: Shell arithmetic, where bash would evaluate a value as code: refused in templates
#: (``[[`` only as bash's test command: ``grep '[[:digit:]]'`` is fine).
_ARITHMETIC = re.compile(
    r"\$\(\(|\$\[|(?:^|(?<=[\s;&|(!{]))(?:\[\[(?=\s)|\(\(|(?:let|declare|typeset)(?=\s))"
)


class Slot(NamedTuple):
    """Where a placeholder stands."""

    key: str
    #: Inside a double-quoted string (its reference is ``${N}``, not ``"${N}"``).
    quoted: bool
    #: A whole word on its own: dropped when the argument is absent.
    word: bool


class Rendering(NamedTuple):
    """One call's command: what runs, with what, and how it reads."""

    #: The ``sh -c`` script: the template with positional parameter references.
    script: str
    #: ``$1``, ``$2``…: one value per placeholder key, in :attr:`CommandTemplate.keys` order.
    argv: tuple[str, ...]
    #: The command with the values written in, shell-quoted.
    display: str


class _Frame:
    __slots__ = ("depth", "kind", "start")

    def __init__(self, kind: str, start: int) -> None:
        self.kind = kind
        self.start = start
        self.depth = 0


_UNTERMINATED = {
    "sq": "a ' quote is never closed",
    "dq": 'a " quote is never closed',
    "cmd": "a $( has no matching )",
    "bq": "a ` backquote is never closed",
    "param": "a ${ has no matching }",
    "arith": "a $(( has no matching ))",
}
_REFUSED_IN = {
    "sq": "inside single quotes, where the shell expands nothing; remove the quotes around "
    "it (each value reaches the command as one word whatever it holds)",
    "bq": "inside backquotes; use $(...) instead",
    "param": "inside ${...}; pass the value as a word of its own",
    "arith": "inside $((...)); pass the value as a word of its own",
}


def _fail(problem: str) -> InvalidCustomTool:
    return InvalidCustomTool("command", problem)


class CommandTemplate:
    """A parsed command template. Immutable; render it once per call."""

    __slots__ = ("_parts", "keys", "text")

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise CustomToolTypeError("command", f"must be a str, not {type(text).__name__}")
        if not text.strip():
            raise _fail("must be a shell command, not empty")
        if len(text) > MAX_TEMPLATE_CHARS:
            raise _fail(f"is {len(text)} characters; at most {MAX_TEMPLATE_CHARS}")
        if "\x00" in text:
            raise _fail("holds a NUL character, which no shell command can hold")
        if arithmetic := _ARITHMETIC.search(text):
            raise _fail(
                f"uses shell arithmetic ({arithmetic.group()!r} at character "
                f"{arithmetic.start() + 1}), where bash would run an argument's value as "
                "code; compute with a program (expr, awk) instead"
            )
        self.text = text
        self._parts = _Parser(text).parse()
        keys = [p.key for p in self._parts if isinstance(p, Slot)]
        #: The placeholder keys, in order of first use: ``$1`` is the first.
        self.keys: tuple[str, ...] = tuple(dict.fromkeys(keys))

    def render(self, values: Mapping[str, str | None]) -> Rendering:
        """The call's command for ``values`` (key -> text; None or missing: absent)."""
        number = {key: n for n, key in enumerate(self.keys, 1)}
        script: list[str] = []
        display: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                script.append(part)
                display.append(part)
                continue
            value = values.get(part.key)
            if value is None and part.word:
                continue  # an absent argument: no word at all
            text = value or ""
            if part.quoted:
                script.append(f"${{{number[part.key]}}}")
                display.append("".join(f"\\{c}" if c in _DQ_SPECIAL else c for c in text))
            else:
                script.append(f'"${{{number[part.key]}}}"')
                display.append(shlex.quote(text))
        argv = tuple(values.get(key) or "" for key in self.keys)
        return Rendering(script="".join(script), argv=argv, display="".join(display))

    def __repr__(self) -> str:
        return f"<CommandTemplate {self.text!r}>"


class _Parser:
    """Reads a template as ``/bin/sh`` would, cutting it at the placeholders."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.parts: list[str | Slot] = []
        self.literal: list[str] = []
        self.stack = [_Frame("top", 0)]
        self.heredoc_at = -1

    def parse(self) -> list[str | Slot]:
        text, i = self.text, 0
        while i < len(text):
            i = self._placeholder(i) if text.startswith("{{", i) else self._step(i)
        frame = self.stack[-1]
        if frame.kind != "top":
            raise _fail(f"{_UNTERMINATED[frame.kind]} (it opens at character {frame.start + 1})")
        self._flush()
        return self.parts

    def _flush(self) -> None:
        if self.literal:
            self.parts.append("".join(self.literal))
            self.literal = []

    def _take(self, i: int, count: int = 1) -> int:
        self.literal.append(self.text[i : i + count])
        return i + count

    # -- placeholders -------------------------------------------------------------------
    def _placeholder(self, i: int) -> int:
        found = _PLACEHOLDER.match(self.text, i)
        if found is None:
            end = self.text.find("}}", i)
            shown = self.text[i : end + 2 if 0 <= end < i + 40 else i + 20]
            raise _fail(
                f"{shown!r} at character {i + 1} is not a placeholder: only {{{{.name}}}} "
                "placeholders exist (a name of letters, digits and _ after a dot)"
            )
        key, kind = found.group(1), self.stack[-1].kind
        where = f"the placeholder {{{{.{key}}}}} at character {i + 1}"
        if kind in _REFUSED_IN:
            raise _fail(f"{where} stands {_REFUSED_IN[kind]}")
        if self.heredoc_at >= 0:
            raise _fail(
                f"{where} comes after a here-document (<< at character {self.heredoc_at + 1}), "
                "whose text the shell reads without quotes; pass the value as a word instead"
            )
        if _ends_with_unescaped(self.literal, "$"):
            raise _fail(f"{where} follows a $, which would change its meaning; remove the $")
        word = kind in ("top", "cmd") and self._starts_word(i) and self._ends_word(found.end())
        self._flush()
        self.parts.append(Slot(key=key, quoted=kind == "dq", word=word))
        return found.end()

    def _starts_word(self, i: int) -> bool:
        before = self.text[:i]
        if not before:
            return True
        if before[-1] not in _WORD_END or _escaped(before, len(before) - 1):
            return False
        return not before.rstrip(" \t").endswith(("<", ">"))  # a redirection's target

    def _ends_word(self, end: int) -> bool:
        return end == len(self.text) or self.text[end] in _WORD_END - {"(", "<", ">"}

    # -- the shell's grammar ------------------------------------------------------------
    def _step(self, i: int) -> int:
        text, frame = self.text, self.stack[-1]
        char = text[i]
        if frame.kind == "sq":
            if char == "'":
                self.stack.pop()
            return self._take(i)
        if char == "\\":
            return self._take(i, 2)
        if frame.kind in ("top", "cmd", "dq") and self._opens(i):
            return self._take(i, 3 if text.startswith("$((", i) else 2 if char == "$" else 1)
        if frame.kind == "dq":
            if char == '"':
                self.stack.pop()
        elif frame.kind in ("top", "cmd"):
            return self._unquoted(i, frame)
        elif frame.kind == "bq":
            if char == "`":
                self.stack.pop()
        elif frame.kind == "param":
            frame.depth += {"{": 1, "}": -1}.get(char, 0)
            if frame.depth < 0:
                self.stack.pop()
        elif frame.kind == "arith":
            if char == ")" and frame.depth == 0 and text.startswith("))", i):
                self.stack.pop()
                return self._take(i, 2)
            frame.depth += {"(": 1, ")": -1}.get(char, 0)
        return self._take(i)

    def _opens(self, i: int) -> bool:
        """Push the frame that ``$((``, ``$(``, ``${`` or a backquote at ``i`` opens."""
        text = self.text
        if text.startswith("${{", i):
            raise _fail(
                f"the placeholder at character {i + 2} follows a $, which would change its "
                "meaning; remove the $"
            )
        if text.startswith("$((", i):
            self.stack.append(_Frame("arith", i))
        elif text.startswith("$(", i):
            self.stack.append(_Frame("cmd", i))
        elif text.startswith("${", i):
            self.stack.append(_Frame("param", i))
        elif text[i] == "`":
            self.stack.append(_Frame("bq", i))
        else:
            return False
        return True

    def _unquoted(self, i: int, frame: _Frame) -> int:
        text, char = self.text, self.text[i]
        if frame.kind == "cmd" and _CASE_WORD.match(text, i) and (text[i - 1] in _WORD_END):
            # Its patterns' ")" would read as the end of the $(...): the parser would lose
            # track of the quotes after it and could put a value outside them.
            raise _fail(
                f"a case statement inside $(...) at character {i + 1}: its patterns' ')' "
                "cannot be told from the end of the substitution; move the case out of the "
                "$(...) (into the main command or a function), or use if/elif"
            )
        if char == "'":
            self.stack.append(_Frame("sq", i))
        elif char == '"':
            self.stack.append(_Frame("dq", i))
        elif char == "#" and (i == 0 or text[i - 1] in _WORD_END):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            if "{{" in text[i:end]:
                raise _fail(
                    f"a placeholder stands in the comment at character {i + 1}; "
                    "move it out of the comment"
                )
            return self._take(i, end - i)
        elif text.startswith("<<", i) and not text.startswith("<<<", i):
            self.heredoc_at = i if self.heredoc_at < 0 else self.heredoc_at
            return self._take(i, 2)
        elif frame.kind == "cmd" and char in "()":
            frame.depth += 1 if char == "(" else -1
            if frame.depth < 0:
                self.stack.pop()
        return self._take(i)


#: The ``case`` keyword: ``case`` followed by a blank.
_CASE_WORD = re.compile(r"case[ \t\n]")


def _escaped(text: str, index: int) -> bool:
    """Whether the character at ``index`` is escaped by an odd run of backslashes."""
    count = 0
    while index - count - 1 >= 0 and text[index - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def _ends_with_unescaped(literal: list[str], char: str) -> bool:
    text = "".join(literal)
    return text.endswith(char) and not _escaped(text, len(text) - 1)
