"""Credential scrubbing (seed 001 §14): static patterns plus values registered at runtime.

Applied to what goes to the model, to the user and to the log. Every match becomes
``[REDACTED]``; for ``key=value`` shapes the key stays, so the text keeps its meaning.
Scrubbing is idempotent: scrubbing scrubbed text changes nothing.

Two rules decide the borderline shapes:

- **An Authorization header's credentials are redacted whatever the scheme.** For
  ``Authorization`` and ``Proxy-Authorization`` (and ``X-…-Authorization``), written as a
  raw HTTP line, a curl ``-H '…'`` argument, a JSON or dict entry or a ``key=value`` pair,
  the scheme word stays (``Bearer``, ``Basic``, ``ApiKey``, ``Digest``,
  ``AWS4-HMAC-SHA256``, any custom one) and everything after it up to the end of the
  header value is redacted: the closing quote when the value or the whole header line is
  quoted, the next ``,``, ``}`` or ``]`` for an unquoted value of a quoted key
  (``"authorization": null, …``), the end of the line otherwise. So Digest's parameters
  and AWS's ``Credential=…, Signature=…`` go with it. The value may start on the next
  line when it is quoted or indented (JSON, YAML). A credential that an earlier pattern
  redacted only in part (an AWS key id before its V2 signature) still loses the rest;
  only a credential that is already all ``[REDACTED]`` is left alone. A
  ``('Authorization', '…')`` pair and a ``Cookie:``/``Set-Cookie:`` value go the same way.
- **An env-style assignment describing a quantity is not a secret.** ``NAME=value`` with
  ``KEY``, ``SECRET``, ``TOKEN``, ``PASSWORD``… in the name is redacted, unless the name
  also has a quantity word (``COUNT``, ``LENGTH``, ``SIZE``, ``TTL``, ``TIMEOUT``,
  ``MIN``, ``MAX``…, see ``_QUANTITY_WORDS``) *and* the value is a small number (up to
  six digits, maybe decimals) with an optional unit (``ms s m h d k kb mb gb``: ``32``,
  ``1.5``, ``3600s``, ``24h``, ``10ms``). Both must hold: ``TOKEN_TTL=3600`` is kept;
  ``TOKEN_TTL=abc123``, ``DB_PASSWORD=12345678`` (a numeric password),
  ``API_KEY_MIN=12345678`` and ``SECRET_MS=12345678ab`` are redacted.

Every pattern that may start inside a run of word characters is anchored at the start
of the run (a look-behind for a word character) or takes the run possessively: scrubbing
stays linear on long ``a-a-a-…`` or ``KEY_KEY_…`` text.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

__all__ = ["REDACTED", "STATIC_PATTERNS", "ScrubPattern", "Scrubber"]

REDACTED = "[REDACTED]"
_NOT_REDACTED = r"(?!\[REDACTED\])"
_KEY_WORDS = (
    r"api[_-]?key|apikey|access[_-]?key|secret|client[_-]?secret|password|passwd"
    r"|token|bearer|private[_-]?key"
)
_SECRET_ENV_WORDS = r"KEY|SECRET|CREDENTIALS?|DSN|TOKEN|PASSWORD|PASSWD"
_QUANTITY_WORDS = (
    r"COUNT|LEN|LENGTH|SIZE|BITS|BYTES|TTL|TIMEOUT|AGE|EXPIRY|EXPIRES|LIFETIME|INTERVAL"
    r"|MIN|MAX|LIMIT|ROUNDS|ITERATIONS|RETRIES|ATTEMPTS|VERSION|SECONDS|MINUTES|HOURS|DAYS"
)


def _env_name(word: str) -> str:
    """An upper-case variable name with ``word`` as one of its ``_``-separated words.

    The word is looked for first, then the name taken in one possessive run: no
    backtracking over a long ``KEY_KEY_…`` run."""
    return rf"(?=(?:[A-Z0-9]+_)*?(?:{word})[_=])[A-Z0-9_]*+="


#: ``TOKEN_TTL=3600``: a quantity word in the name and a small number (up to six digits,
#: maybe decimals), maybe with a unit: ``12345678`` is a numeric secret, not a quantity.
_QUANTITY_ASSIGNMENT = (
    _env_name(_QUANTITY_WORDS)
    + r"[0-9]{1,6}(?:\.[0-9]{1,6})?(?i:ms|kb|mb|gb|s|m|h|d|k)?(?![^\s'\"])"
)

#: The header's name and separator, then the value's opening quote, if any. ``lq`` is a
#: quote opening the whole header line (curl ``-H 'Authorization: …'``), ``kq`` one around
#: the name alone (JSON); either may be escaped (JSON inside a JSON string).
_AUTHORIZATION_NAME = (
    r"(?:(?P<kq>\\?[\"'])[\w-]*?authorization(?P=kq)"
    r"|(?:(?P<lq>\\?[\"'])|(?<![\w\"'\\-]))[\w-]*?authorization)"
    r"[ \t]*+[:=][ \t]*+(?:\r?\n[ \t]*+(?=\\?[\"'])|\r?\n[ \t]++(?=\S))?+(?P<vq>\\?[\"'])?+"
)
#: Possessive like the separators above: whenever there is a scheme it is taken, so a
#: second pass cannot redact the scheme in front of the first pass's ``[REDACTED]``.
_AUTHORIZATION_SCHEME = r"(?:[A-Za-z][\w.+/-]*[ \t]+(?=[^\s]))?+"
#: Up to the value's closing quote, the header line's closing quote, the end of an
#: unquoted value of a quoted key (``"authorization": null, …``), or the end of line.
_AUTHORIZATION_CREDENTIALS = (
    r"(?(vq)(?:(?!(?P=vq))(?:\\.|[^\n\\]))+"
    r"|(?(lq)(?:(?!(?P=lq))(?:\\.|[^\n\\]))+|(?(kq)[^\r\n,}\]]+|[^\r\n]+)))"
)
#: A second pass leaves the header alone only when its whole credential is already
#: ``[REDACTED]``: a credential an earlier pattern redacted in part (an AWS key id before
#: its signature, a registered value) still loses the rest.
_ALREADY_REDACTED = (
    r"(?!\[REDACTED\](?(vq)(?P=vq)|(?(lq)(?P=lq)"
    r"|(?(kq)[ \t]*(?:[,}\]\r\n]|\Z)|[ \t]*(?:[\r\n]|\Z)))))"
)


class ScrubPattern(NamedTuple):
    """``regex`` matches a secret. With a ``keep`` group, that group's text is kept and
    the rest of the match is redacted; quoted values stay quoted.

    ``needs``: literals of which every match holds at least one, in ``str.casefold()``
    form; a text whose casefolded form holds none of them is not searched at all (most
    texts hold no ``sk-``, no ``://``, no ``bearer``: a 50,000-character web page is
    scrubbed in a tenth of the time). ``None``: always searched. The literals of a
    pattern that ignores case hold no ``i``: under ``re.IGNORECASE`` an ``i`` also
    matches the dotless i (U+0131), which casefolds to itself; ``k`` and ``s`` are safe
    (the Kelvin sign U+212A and the long s U+017F casefold to them)."""

    name: str
    regex: re.Pattern[str]
    needs: tuple[str, ...] | None = None


def _p(name: str, pattern: str, flags: int = 0, *, needs: tuple[str, ...] | None) -> ScrubPattern:
    return ScrubPattern(name, re.compile(pattern, flags), needs)


#: In the order they run. The first eight rows are seed 001 §14's table.
STATIC_PATTERNS: tuple[ScrubPattern, ...] = (
    _p(
        "private_key_block",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
        needs=("private key",),
    ),
    _p("anthropic", r"(?<![\w-])sk-ant-[A-Za-z0-9_-]{20,}", needs=("sk-",)),
    _p("openai", r"(?<![\w-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", needs=("sk-",)),
    _p(
        "github",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b",
        needs=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _p("github_fine_grained", r"\bgithub_pat_[A-Za-z0-9_]{22,}", needs=("github_pat_",)),
    _p("aws_access_key", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", needs=("akia", "asia")),
    _p(
        "connection_string",
        r"\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?)://[^\s'\"<>`]+",
        needs=("://",),
    ),
    _p(
        "url_credentials",
        r"(?P<keep>(?<![\w+.-])[a-z][a-z0-9+.-]*://)[^\s/:@'\"]+:[^\s/@'\"]+(?=@)",
        needs=("@",),
    ),
    _p("slack", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", needs=("xox",)),
    _p("stripe", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", needs=("_live_", "_test_")),
    _p("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", needs=("aiza",)),
    _p("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", needs=("eyj",)),
    _p(
        "authorization_header",
        r"(?P<keep>"
        + _AUTHORIZATION_NAME
        + _AUTHORIZATION_SCHEME
        + r")"
        + _ALREADY_REDACTED
        + _AUTHORIZATION_CREDENTIALS,
        re.IGNORECASE,
        needs=("author",),
    ),
    _p(
        "authorization_pair",
        r"(?P<keep>[(\[][ \t]*b?(?P<q>[\"'])[\w-]*?authorization(?P=q)[ \t]*,[ \t]*b?(?P<v>[\"'])"
        + _AUTHORIZATION_SCHEME
        + r")(?!\[REDACTED\](?P=v))(?:(?!(?P=v))(?:\\.|[^\n\\]))+",
        re.IGNORECASE,
        needs=("author",),
    ),
    _p(
        "cookie_header",
        r"(?P<keep>(?<![\w-])(?:set-)?cookie(?:\\?[\"'])?+[ \t]*+:[ \t]*+(?:\\?[\"'])?+)"
        r"(?=[^\s=;'\"\\]+=)[^\r\n'\"\\]+",
        re.IGNORECASE,
        needs=("cook",),
    ),
    _p(
        "env_var",
        r"(?P<keep>\b(?!"
        + _QUANTITY_ASSIGNMENT
        + r")"
        + _env_name(_SECRET_ENV_WORDS)
        + r")"
        + _NOT_REDACTED
        + r"[^\s'\"]+",
        needs=("=",),
    ),
    _p(
        "virtual_env_var",
        r"(?P<keep>\bVIRTUAL_[A-Z0-9_]*=)" + _NOT_REDACTED + r"[^\s'\"]+",
        needs=("virtual_",),
    ),
    _p(
        "generic_key_value",
        r"(?P<keep>(?<![\w.-])[\w.-]*?(?:"
        + _KEY_WORDS
        # The value may start on the next line only when that line is indented (YAML):
        # a key at the end of a text must not take the line after it (a closing tag).
        + r")[\"']?[ \t]*[:=][ \t]*(?:\r?\n[ \t]+)?)"
        + _NOT_REDACTED
        + r"(?:\"(?:[^\"\\\n]|\\.)+\"|'[^'\n]+'"
        + r"|(?:(?:bearer|basic|token)\s+)?[^\s\"',;&}\]]+)",
        re.IGNORECASE,
        needs=("key", "secret", "passw", "token", "bearer"),
    ),
    _p(
        "bearer",
        r"(?P<keep>\bbearer\s+)" + _NOT_REDACTED + r"[A-Za-z0-9._~+/=-]{8,}",
        re.I,
        needs=("bearer",),
    ),
    _p("long_hex", r"\b[0-9a-fA-F]{64,}\b", needs=None),
)

#: Mapping keys whose values are secrets whatever they look like.
_SECRET_KEY = re.compile(
    r"^(?:[\w.-]*[_.-])?(?:api[_-]?key|apikey|secret|client[_-]?secret|password|passwd"
    r"|token|access[_-]?token|refresh[_-]?token|authorization|private[_-]?key|credentials?"
    r"|dsn|cookie)$",
    re.IGNORECASE,
)


def _replace(match: re.Match[str]) -> str:
    keep = match.group("keep") if "keep" in match.re.groupindex else None
    if keep is None:
        return REDACTED
    rest = match.group(0)[len(keep) :]
    if len(rest) >= 2 and rest[0] == rest[-1] and rest[0] in "\"'":
        return f"{keep}{rest[0]}{REDACTED}{rest[0]}"
    return keep + REDACTED


class Scrubber:
    """Redacts secrets from text and from JSON-like values. Thread-safe: values can be
    added from any thread while others scrub (readers take no lock)."""

    def __init__(
        self,
        values: Iterable[str] = (),
        *,
        patterns: Iterable[ScrubPattern] = STATIC_PATTERNS,
        min_value_length: int = 4,
    ) -> None:
        self._patterns = tuple(patterns)
        self._min = min_value_length
        self._lock = threading.Lock()
        self._values: frozenset[str] = frozenset()
        self._dynamic: re.Pattern[str] | None = None
        self.add_values(*values)

    # -- dynamic values -----------------------------------------------------------------
    def add_values(self, *values: str) -> None:
        """Redact these exact values from now on (configured secrets, server IPs...).

        Values shorter than ``min_value_length`` are ignored: they would redact words.
        """
        fresh = {v for v in values if isinstance(v, str) and len(v.strip()) >= self._min}
        if not fresh:
            return
        with self._lock:
            self._rebuild(self._values | fresh)

    def remove_values(self, *values: str) -> None:
        with self._lock:
            self._rebuild(self._values - set(values))

    def _rebuild(self, values: frozenset[str]) -> None:
        ordered = sorted(values, key=len, reverse=True)  # longest first: no partial leftovers
        pattern = re.compile("|".join(re.escape(v) for v in ordered)) if ordered else None
        self._values, self._dynamic = values, pattern

    @property
    def values_count(self) -> int:
        return len(self._values)

    # -- scrubbing ----------------------------------------------------------------------
    def scrub(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED]``."""
        if not text:
            return text
        dynamic = self._dynamic  # one read: a concurrent add_values swaps the reference
        if dynamic is not None:
            text = dynamic.sub(REDACTED, text)
        folded = text.casefold()  # after the values: a match never adds a literal
        for pattern in self._patterns:
            if pattern.needs is None or any(literal in folded for literal in pattern.needs):
                text = pattern.regex.sub(_replace, text)
        return text

    def scrub_value(self, value: Any) -> Any:
        """Scrub every string in a JSON-like value; a mapping key that names a secret
        (``password``, ``api_key``, ``token``…) has its whole value redacted."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, Mapping):
            return {str(k): self._scrub_item(str(k), v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.scrub_value(v) for v in value]
        return value

    def _scrub_item(self, key: str, value: Any) -> Any:
        secret = _SECRET_KEY.match(key) and not isinstance(value, bool)
        if secret and isinstance(value, str | int | float) and value != "":
            return REDACTED
        return self.scrub_value(value)

    def find(self, text: str) -> list[str]:
        """The names of the patterns that match ``text`` (``dynamic`` for a value)."""
        found = [p.name for p in self._patterns if p.regex.search(text)]
        dynamic = self._dynamic
        if dynamic is not None and dynamic.search(text):
            found.insert(0, "dynamic")
        return found
