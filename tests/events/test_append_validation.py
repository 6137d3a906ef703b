"""The store never writes what it cannot read (issue 17).

For every registered event type and every field, wrong-typed and edge values either make
``append`` raise :class:`InvalidEvent` (naming the type and the field) and write nothing,
or the event reads back equal, on the memory backend and on a real SQLite file.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clawlog.events import (
    ANY,
    Event,
    EventStore,
    InvalidAppend,
    InvalidEvent,
    MemoryBackend,
    SqliteBackend,
    all_event_classes,
    event_tag,
    open_store,
)

CLASSES = all_event_classes()
BACKENDS = ["memory", "sqlite"]

#: Values of the wrong type for most fields, and the edges of the right ones.
FIXED_VALUES: list[Any] = [
    5,
    -(2**63),
    2**64 - 1,
    2**64,
    1.5,
    math.nan,
    math.inf,
    True,
    None,
    "",
    "x",
    "\ud800",
    b"bytes",
    [1, "a"],
    ("a",),
    {1: "a"},
    {"k": object()},
    {"a"},
    object(),
]

_SURROGATES = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=3)
_PLAIN = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=20),
    _SURROGATES,
    st.binary(max_size=8),
)
#: Anything a caller might put in a field by mistake, nested a little.
WRONG = st.recursive(
    _PLAIN,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner),
        st.dictionaries(st.one_of(st.text(max_size=5), st.integers()), inner, max_size=3),
    ),
    max_leaves=6,
)


def valid(info: mi.Type) -> st.SearchStrategy[Any]:
    """Values of the declared type, edges included (empty, huge, NaN, unicode)."""
    match info:
        case mi.StrType():
            return st.text(max_size=30)
        case mi.LiteralType():
            return st.sampled_from(info.values)
        case mi.IntType():
            return st.integers(min_value=-(2**63), max_value=2**64 - 1)
        case mi.FloatType():
            return st.floats()
        case mi.BoolType():
            return st.booleans()
        case mi.BytesType():
            return st.binary(max_size=40)
        case mi.NoneType():
            return st.none()
        case mi.AnyType():
            return WRONG.filter(lambda v: _encodable(v))
        case mi.ListType():
            return st.lists(valid(info.item_type), max_size=3)
        case mi.DictType():
            return st.dictionaries(valid(info.key_type), valid(info.value_type), max_size=3)
        case mi.UnionType():
            return st.one_of([valid(t) for t in info.types])
        case mi.StructType():
            # Optional fields drawn too, and only what constructs: a struct may check its
            # fields together (an ImagePart holds data or a url, not neither).
            required = {f.name: valid(f.type) for f in info.fields if f.required}
            optional = {f.name: valid(f.type) for f in info.fields if not f.required}
            drawn = st.fixed_dictionaries(required, optional=optional)
            return drawn.map(lambda kw: _constructed(info.cls, kw)).filter(_is_built)
    raise AssertionError(f"no strategy for {info!r}: extend valid()")


_NOT_BUILT = object()


def _constructed(cls: type[Any], fields: dict[str, Any]) -> Any:
    try:
        return cls(**fields)
    except (ValueError, TypeError):
        return _NOT_BUILT


def _is_built(value: Any) -> bool:
    return value is not _NOT_BUILT


def baseline(cls: type[Event]) -> dict[str, Any]:
    """Plain valid values for the required fields of ``cls``."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    return {f.name: _plain(f.type) for f in info.fields if f.required}


def _plain(info: mi.Type) -> Any:
    match info:
        case mi.StrType():
            return "x"
        case mi.LiteralType():
            return info.values[0]
        case mi.IntType():
            return 1
        case mi.FloatType():
            return 1.0
        case mi.BoolType():
            return True
        case mi.ListType():
            return []
        case mi.DictType():
            return {}
        case mi.UnionType():
            return _plain(info.types[0])
        case mi.StructType():
            return info.cls(**{f.name: _plain(f.type) for f in info.fields if f.required})
    return None


def _encodable(value: Any) -> bool:
    try:
        msgspec.msgpack.encode(value)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def same(written: Any, read: Any) -> bool:
    """Equal as the declared types carry it: a tuple or set reads back as a list, NaN as
    NaN, an int in a float field as that float, a map in a struct field as that struct
    (what append returns too)."""
    if isinstance(written, dict) and isinstance(read, msgspec.Struct):
        return same(msgspec.convert(written, type(read)), read)
    if isinstance(written, msgspec.Struct):
        return type(written) is type(read) and all(
            same(getattr(written, name), getattr(read, name)) for name in written.__struct_fields__
        )
    if type(written) is int and type(read) is float:
        return float(written) == read
    if isinstance(written, float) and math.isnan(written):
        return isinstance(read, float) and math.isnan(read)
    if isinstance(written, set | frozenset):
        return isinstance(read, list) and len(read) == len(written) and set(read) == written
    if isinstance(written, list | tuple):
        return (
            isinstance(read, list | tuple)
            and len(read) == len(written)
            and all(same(w, r) for w, r in zip(written, read, strict=True))
        )
    if isinstance(written, dict):
        return (
            isinstance(read, dict)
            and written.keys() == read.keys()
            and all(same(v, read[k]) for k, v in written.items())
        )
    return (type(written) is bool) == (type(read) is bool) and written == read


class Harness:
    """One store on its own loop, so hypothesis can drive it from a plain test."""

    def __init__(self, kind: str, path: Path) -> None:
        self.runner = asyncio.Runner()
        backend = MemoryBackend() if kind == "memory" else SqliteBackend(path / "log.db")
        self.store: EventStore = self.runner.run(open_store(backend))
        self.streams = 0

    def check(self, event: Event, field: str) -> None:
        """Append ``event`` to a fresh stream: refused naming ``field``, or read back equal."""
        self.streams += 1
        stream = f"prop/{self.streams}"
        head = self.runner.run(self.store.head_position())
        try:
            appended = self.runner.run(self.store.append(stream, [event], expected_version=ANY))
        except InvalidEvent as refused:
            assert refused.event_type == event_tag(type(event))
            assert refused.field == field, refused
            assert self.runner.run(self.store.head_position()) == head
            return
        read = self.runner.run(self.store.read_stream(stream))
        assert len(read) == 1 and same(appended[0].event, read[0].event)
        assert same(event, read[0].event), (event, read[0].event)

    def close(self) -> None:
        self.runner.run(self.store.close())
        self.runner.close()


@pytest.fixture(params=BACKENDS)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    opened = Harness(request.param, tmp_path)
    try:
        yield opened
    finally:
        opened.close()


def test_every_field_of_every_event_refuses_or_round_trips_fixed_values(
    harness: Harness,
) -> None:
    checked = 0
    for cls in CLASSES:
        for name in cls.__struct_fields__:
            for value in FIXED_VALUES:
                fields = baseline(cls) | {name: value}
                harness.check(cls(**fields), name)
                checked += 1
    # the log is still readable from the start after every refusal
    assert len(harness.runner.run(harness.store.read_all(1, limit=100_000))) < checked


@pytest.mark.parametrize("cls", CLASSES, ids=event_tag)
def test_any_value_in_any_field_is_refused_or_read_back_equal(
    cls: type[Event], harness: Harness
) -> None:
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    if not info.fields:
        return
    declared = {f.name: f.type for f in info.fields}

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        database=None,
    )
    @given(data=st.data())
    def property_(data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(declared)), label="field")
        value = data.draw(st.one_of(WRONG, valid(declared[name])), label="value")
        harness.check(cls(**(baseline(cls) | {name: value})), name)

    property_()
    harness.runner.run(harness.store.read_all(1, limit=100_000))  # no CorruptEvent


def test_a_refused_event_names_type_and_field_and_is_an_invalid_append() -> None:
    from clawlog.events.domain.session import TurnStarted

    async def refuse() -> InvalidEvent:
        async with await open_store("memory:") as store:
            with pytest.raises(InvalidEvent) as refused:
                await store.append(
                    "session/main/u1",
                    [TurnStarted(turn_id="t1", text="hi", user=5)],  # type: ignore[arg-type]
                    expected_version=ANY,
                )
            assert await store.read_all() == []
            return refused.value

    error = asyncio.run(refuse())
    assert isinstance(error, InvalidAppend)
    assert (error.event_type, error.field) == ("session.turn_started", "user")
    assert "session.turn_started" in str(error) and "'user'" in str(error)


def test_one_invalid_event_in_a_batch_appends_none_of_it(tmp_path: Path) -> None:
    from clawlog.events.domain.session import TurnCompleted, TurnStarted

    async def run() -> None:
        async with await open_store(SqliteBackend(tmp_path / "log.db")) as store:
            good = TurnStarted(turn_id="t1", text="hi")
            bad = TurnCompleted(turn_id="t1", reply=["not", "a", "str"], iterations=1)  # type: ignore[arg-type]
            with pytest.raises(InvalidEvent, match=r"field 'reply' of session\.turn_completed"):
                await store.append("session/main/u1", [good, bad], expected_version=0)
            assert await store.stream_version("session/main/u1") == 0
            [recorded] = await store.append("session/main/u1", [good], expected_version=0)
            assert recorded.event == good and recorded.version == 1

    asyncio.run(run())
