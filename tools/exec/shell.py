"""A POSIX-shell lexer for command analysis (not for running anything).

It turns a command line into simple commands the way a shell would see them: quotes
removed (``r''m`` is ``rm``), ``$'\\x72'`` decoded, ``${IFS}`` read as a blank, line
continuations joined, and the bodies of ``$( )``, backticks and ``<( )`` collected so they
can be analyzed as commands of their own. Words whose text comes from an expansion are
marked, because their real value is unknown until the shell runs.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..errors import CommandParseError

__all__ = ["SimpleCommand", "Word", "lex", "split_commands"]

_OPERATORS = ("&&", "||", ";;", "|&", ";", "&", "|", "(", ")", "\n")
_REDIRECTS = ("<<<", "<<-", "<<", ">>", ">&", "<&", "&>>", "&>", ">|", "<>", ">", "<")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_C_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
#: Keywords that may stand before a command without being it.
KEYWORDS = frozenset(
    {
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "do",
        "done",
        "while",
        "until",
        "!",
        "{",
        "}",
        "case",
        "esac",
        "function",
        "select",
    }
)


class Word(NamedTuple):
    text: str
    #: Part of the text comes from ``$VAR``, ``$( )`` or backticks.
    expanded: bool = False


class Token(NamedTuple):
    kind: str  # word | op | redirect
    value: str
    expanded: bool = False


class SimpleCommand(NamedTuple):
    words: list[Word]
    #: (operator, target) pairs such as (">", "/dev/sda").
    redirects: list[tuple[str, str]]
    #: The operator that connects it to the next command ("|", ";", "&&"...; "" at the end).
    joiner: str


class _Lexer:
    def __init__(self, source: str) -> None:
        self.s = source.replace("\\\n", "")
        self.i = 0
        self.tokens: list[Token] = []
        self.substitutions: list[str] = []
        self.buf: list[str] | None = None
        self.expanded = False

    # -- words -------------------------------------------------------------------------
    def add(self, text: str, expanded: bool = False) -> None:
        if self.buf is None:
            self.buf = []
        self.buf.append(text)
        self.expanded = self.expanded or expanded

    def flush(self) -> None:
        if self.buf is not None:
            self.tokens.append(Token("word", "".join(self.buf), self.expanded))
        self.buf, self.expanded = None, False

    def run(self) -> tuple[list[Token], list[str]]:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r":
                self.flush()
                self.i += 1
            elif c == "#" and self.buf is None:
                end = s.find("\n", self.i)
                self.i = len(s) if end < 0 else end
            elif c == "\\":
                self.add(s[self.i + 1 : self.i + 2])
                self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise CommandParseError("unterminated single quote")
                self.add(s[self.i + 1 : end])
                self.i = end + 1
            elif c == '"':
                self.double_quoted()
            elif c == "$":
                self.dollar(quoted=False)
            elif c == "`":
                self.backtick()
            elif c in "<>" and s.startswith("(", self.i + 1):
                self.flush()
                body, self.i = _balanced(s, self.i + 1, "(", ")")
                self.substitutions.append(body)
                self.tokens.append(Token("word", f"{c}(…)", True))
            elif self.operator():
                continue
            else:
                self.add(c)
                self.i += 1
        self.flush()
        return self.tokens, self.substitutions

    def operator(self) -> bool:
        s, i = self.s, self.i
        for op in _REDIRECTS:
            if s.startswith(op, i):
                if self.buf is not None and "".join(self.buf).isdigit():
                    self.buf = None  # "2>" : the fd number belongs to the redirect
                self.flush()
                self.tokens.append(Token("redirect", op))
                self.i += len(op)
                return True
        for op in _OPERATORS:
            if s.startswith(op, i):
                self.flush()
                self.tokens.append(Token("op", op))
                self.i += len(op)
                return True
        return False

    def double_quoted(self) -> None:
        s = self.s
        self.i += 1
        self.add("")
        while self.i < len(s):
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and s[self.i + 1 : self.i + 2] in ('"', "\\", "$", "`"):
                self.add(s[self.i + 1])
                self.i += 2
            elif c == "$":
                self.dollar(quoted=True)
            elif c == "`":
                self.backtick()
            else:
                self.add(c)
                self.i += 1
        raise CommandParseError("unterminated double quote")

    def dollar(self, quoted: bool) -> None:
        s, i = self.s, self.i
        nxt = s[i + 1 : i + 2]
        if nxt == "'" and not quoted:
            text, self.i = _ansi_c(s, i + 2)
            self.add(text)
        elif s.startswith("((", i + 1):
            body, self.i = _balanced(s, i + 1, "(", ")")
            self.add(f"$({body})", expanded=True)
        elif nxt == "(":
            body, self.i = _balanced(s, i + 1, "(", ")")
            self.substitutions.append(body)
            self.add("$(…)", expanded=True)
        elif nxt == "{":
            body, self.i = _balanced(s, i + 1, "{", "}")
            self.variable(body.split(":", 1)[0].split("[", 1)[0].lstrip("!#"), quoted)
        elif (match := _NAME.match(s, i + 1)) is not None:
            self.i = match.end()
            self.variable(match.group(), quoted)
        else:
            self.add("$")
            self.i += 1

    def variable(self, name: str, quoted: bool) -> None:
        if name == "IFS" and not quoted:
            self.flush()  # an unquoted $IFS splits words like a blank
        else:
            self.add(f"${{{name}}}", expanded=True)

    def backtick(self) -> None:
        s, i = self.s, self.i + 1
        body: list[str] = []
        while i < len(s) and s[i] != "`":
            if s[i] == "\\" and i + 1 < len(s):
                body.append(s[i + 1])
                i += 2
            else:
                body.append(s[i])
                i += 1
        if i >= len(s):
            raise CommandParseError("unterminated backquote")
        self.substitutions.append("".join(body))
        self.add("`…`", expanded=True)
        self.i = i + 1


def _balanced(s: str, start: int, open_: str, close: str) -> tuple[str, int]:
    """The text between ``s[start]`` (an opener) and its closer, quotes respected."""
    depth, i = 0, start
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            end = s.find("'", i + 1)
            if end < 0:
                raise CommandParseError("unterminated single quote")
            i = end + 1
            continue
        if c == '"':
            i = _skip_double(s, i)
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return s[start + 1 : i], i + 1
        i += 1
    raise CommandParseError(f"unterminated {open_}")


def _skip_double(s: str, i: int) -> int:
    i += 1
    while i < len(s):
        if s[i] == "\\":
            i += 2
        elif s[i] == '"':
            return i + 1
        elif s.startswith("$(", i):
            _, i = _balanced(s, i + 1, "(", ")")
        else:
            i += 1
    raise CommandParseError("unterminated double quote")


def _ansi_c(s: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    while i < len(s):
        c = s[i]
        if c == "'":
            return "".join(out), i + 1
        if c != "\\" or i + 1 >= len(s):
            out.append(c)
            i += 1
            continue
        e = s[i + 1]
        if e in _C_ESCAPES:
            out.append(_C_ESCAPES[e])
            i += 2
        elif e == "x" and (m := re.match(r"[0-9a-fA-F]{1,2}", s[i + 2 :])):
            out.append(chr(int(m.group(), 16)))
            i += 2 + len(m.group())
        elif e in "uU" and (m := re.match(r"[0-9a-fA-F]{1,8}", s[i + 2 :])):
            out.append(chr(min(int(m.group(), 16), 0x10FFFF)))
            i += 2 + len(m.group())
        elif (m := re.match(r"[0-7]{1,3}", s[i + 1 :])) is not None:
            out.append(chr(int(m.group(), 8)))
            i += 1 + len(m.group())
        else:
            out.append(e)
            i += 2
    raise CommandParseError("unterminated $'...' quote")


def lex(source: str) -> tuple[list[Token], list[str]]:
    """Tokens of ``source`` and the bodies of its command substitutions."""
    return _Lexer(source).run()


def split_commands(tokens: list[Token]) -> list[SimpleCommand]:
    """Simple commands in order, each with the operator that follows it."""
    commands: list[SimpleCommand] = []
    words: list[Word] = []
    redirects: list[tuple[str, str]] = []
    pending: str | None = None
    for token in tokens:
        if token.kind == "redirect":
            pending = token.value
        elif token.kind == "word":
            if pending is not None:
                redirects.append((pending, token.value))
                pending = None
            elif words or token.value not in KEYWORDS:
                words.append(Word(token.value, token.expanded))
        else:
            if words or redirects:
                commands.append(SimpleCommand(words, redirects, token.value))
            words, redirects = [], []
    if words or redirects:
        commands.append(SimpleCommand(words, redirects, ""))
    return commands
