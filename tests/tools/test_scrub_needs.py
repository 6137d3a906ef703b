"""The literal prefilter of the scrubber (``ScrubPattern.needs``) never changes what is
redacted: a pattern is skipped only for a text it could not have matched."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from clawlog.tools.scrub import STATIC_PATTERNS, Scrubber

#: Pieces of every secret shape the patterns know, and characters that fold oddly.
_PIECES = [
    "sk-",
    "sk-ant-",
    "ghp_",
    "github_pat_",
    "AKIA",
    "ASIA",
    "postgres://",
    "user:pw@",
    "xoxb-",
    "sk_live_",
    "rk_test_",
    "AIza",
    "eyJ",
    ".eyJ",
    "Authorization: ",
    "AUTHORIZATION",
    "Cookie: ",
    "Set-Cookie:",
    "API_KEY=",
    "DB_PASSWORD=",
    "VIRTUAL_ENV=",
    "token: ",
    "Bearer ",
    "BEARER ",
    "password=",
    "secret:",
    "private_key=",
    "-----BEGIN PRIVATE KEY-----",
    "-----END PRIVATE KEY-----",
    "\u212a",
    "\u017f",
    "\u0131",
    "\u0130",
    "K",
    "S",
    "I",
    "=",
    "@",
    "://",
    "'",
    '"',
    " ",
    "\n",
    "abcdef0123456789" * 4,
    "A1b2C3d4E5f6G7h8I9j0",
]


def _unfiltered() -> Scrubber:
    return Scrubber(patterns=[p._replace(needs=None) for p in STATIC_PATTERNS])


_FILTERED, _UNFILTERED = Scrubber(), _unfiltered()


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_PIECES) | st.text(max_size=6), max_size=30).map("".join))
def test_the_prefilter_redacts_exactly_what_the_patterns_alone_redact(text: str) -> None:
    assert _FILTERED.scrub(text) == _UNFILTERED.scrub(text)


def test_a_case_blind_patterns_literals_hold_no_i() -> None:
    # Under IGNORECASE an i also matches U+0131, whose casefold is itself: a literal with
    # an i would let such a text skip the pattern.
    for pattern in STATIC_PATTERNS:
        if pattern.needs is not None and pattern.regex.flags & re.IGNORECASE:
            assert not any("i" in literal for literal in pattern.needs), pattern.name


def test_every_literal_is_casefolded() -> None:
    for pattern in STATIC_PATTERNS:
        for literal in pattern.needs or ():
            assert literal == literal.casefold(), (pattern.name, literal)
