"""The writer's hashing loop, compiled (``events/_chain_seal.c``) and in Python
(``sqlite_writer.seal_in_python``): both hash every row as :func:`chain.link` does."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clawlog.events.backends.sqlite_writer import compiled_seal, seal_in_python
from clawlog.events.chain import GENESIS, link

#: The tests below compare it with Python; the one above them fails if it was not built.
compiled = pytest.mark.skipif(compiled_seal is None, reason="not built")

_U64 = st.integers(min_value=0, max_value=2**64 - 1)
_TEXT = st.text(max_size=12)  # every width of UTF-8, surrogates left out by hypothesis
_PLAIN_ROW = st.tuples(
    _U64, _TEXT, _U64, _TEXT, _U64, st.binary(max_size=300), st.floats(allow_nan=False)
)
_OPTIONAL = st.none() | _TEXT
_FULL_ROW = st.tuples(_PLAIN_ROW, _OPTIONAL, _OPTIONAL, _OPTIONAL, _OPTIONAL).map(
    lambda parts: (*parts[0], *parts[1:])
)


def linked(prev: bytes, rows: list[tuple[Any, ...]]) -> list[bytes]:
    hashes = []
    for row in rows:
        prev = link(prev, *row)
        hashes.append(prev)
    return hashes


def test_the_install_compiled_the_loop() -> None:
    """The README's install builds it here; a silent fallback would cost 0.7 µs an event."""
    assert compiled_seal is not None


@compiled
@given(st.lists(_PLAIN_ROW, max_size=20), st.integers(min_value=0, max_value=25))
def test_plain_rows_hash_as_chain_link_in_c_and_in_python(
    rows: list[tuple[Any, ...]], start: int
) -> None:
    assert compiled_seal is not None
    expected = linked(GENESIS, rows[start:])
    in_c, in_python = list(rows), list(rows)
    last_c = compiled_seal(GENESIS, in_c, start)
    last_python = seal_in_python(GENESIS, in_python, start, {})
    assert in_c[:start] == rows[:start]  # the rows before start are left alone
    assert [row[:7] for row in in_c] == rows
    assert [bytes(row[7]) for row in in_c[start:]] == expected
    assert in_c == in_python
    assert bytes(last_c) == bytes(last_python) == (expected[-1] if expected else GENESIS)


@compiled
@given(st.lists(_FULL_ROW, max_size=10))
def test_rows_with_metadata_hash_as_chain_link(rows: list[tuple[Any, ...]]) -> None:
    assert compiled_seal is not None
    sealed = list(rows)
    compiled_seal(GENESIS, sealed, 0)
    assert [bytes(row[11]) for row in sealed] == linked(GENESIS, rows)
    assert all(isinstance(row[11], bytearray) for row in sealed)  # bound without adapting


@compiled
def test_a_bad_value_raises_and_leaves_the_rows_before_it_hashed() -> None:
    assert compiled_seal is not None
    good = (1, "s", 1, "t", 1, b"p", 1.0)
    for bad, error in [
        ((-1, "s", 1, "t", 1, b"p", 1.0), OverflowError),  # a negative position
        ((1, b"s", 1, "t", 1, b"p", 1.0), TypeError),  # a stream that is not text
        ((1, "s", 1, "t", 1, "p", 1.0), TypeError),  # a payload that is not bytes
        ((1, "s", 1, "\ud800", 1, b"p", 1.0), UnicodeEncodeError),
        ((1, "s", 1, "t", 1, b"p", None), TypeError),
        ((1, "s", 1), TypeError),  # neither 7 nor 11 values
    ]:
        rows: list[tuple[Any, ...]] = [good, bad]
        with pytest.raises(error):
            compiled_seal(GENESIS, rows, 0)
        assert bytes(rows[0][7]) == link(GENESIS, *good)
        assert rows[1] == bad
    with pytest.raises(ValueError, match="32 bytes"):
        compiled_seal(b"short", [good], 0)
