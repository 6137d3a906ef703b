"""The store contract: what every storage backend must do, as tests to run against yours.

A backend (see :class:`events.backends.base.StorageBackend`) proves itself by passing
these tests, as clawlog's memory, SQLite and PostgreSQL backends do::

    from pathlib import Path

    from clawlog.events import StorageBackend
    from clawlog.events.testing import StoreContract

    class TestMyBackend(StoreContract):
        async def make_backend(self, tmp_path: Path) -> StorageBackend:
            return MyBackend(tmp_path / "log")  # unopened; the suite opens and closes it

The suite needs pytest and pytest-asyncio (``pip install pytest pytest-asyncio``); this
module imports them, the rest of clawlog does not. Each test gets a fresh backend. The
sample events (``Noted``, ``Counted``, ``Memo``) are registered only in the contract's
registry (:func:`contract_registry`); a test suite may use them for its own stores.
The lease tests run for a backend that implements :class:`LeaseBackend` and skip for
the others; a lease that must be expired now is taken with a time to live of 0.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec

from .backends.base import ANY, NO_STREAM, LeaseBackend, LeaseToken, StorageBackend
from .base import Event, UnknownEvent
from .domain import all_event_classes
from .envelope import EventMetadata, NewRecord
from .errors import (
    CorruptEvent,
    Fenced,
    IdempotencyKeyReused,
    InvalidAppend,
    MissingDependency,
    PayloadTooLarge,
    StoreClosed,
    VersionConflict,
)
from .open import open_store
from .pages import LogPages
from .registry import EventRegistry
from .store import EventStore

try:
    import pytest
    import pytest_asyncio
except ImportError as exc:  # only this module needs them
    raise MissingDependency(
        "clawlog.events.testing needs pytest and pytest-asyncio: pip install pytest pytest-asyncio"
    ) from exc

__all__ = ["SAMPLE_EVENTS", "Counted", "Memo", "Noted", "StoreContract", "contract_registry"]


class Noted(Event, frozen=True, tag="test.noted"):
    text: str
    n: int = 0


class Counted(Event, frozen=True, tag="test.counted"):
    amount: int


class Memo(Event, frozen=True, tag="test.memo"):
    """At schema 2: schema 1 had ``body`` instead of ``text`` and no ``words``."""

    schema_version = 2
    text: str
    words: int = 0


#: The events the contract appends, besides clawlog's own.
SAMPLE_EVENTS = (Noted, Counted, Memo)


def contract_registry() -> EventRegistry:
    """clawlog's events plus the sample events: the registry the contract's stores use."""
    return EventRegistry((*all_event_classes(), *SAMPLE_EVENTS))


def _noted(n: int, text: str = "x") -> Noted:
    return Noted(text=text, n=n)


def _leases(store: EventStore) -> LeaseBackend:
    if not isinstance(store.backend, LeaseBackend):
        pytest.skip("the backend keeps no leases (one process writes it)")
    return store.backend


async def _taken_over(leases: LeaseBackend, stream: str, old: str, new: str) -> LeaseToken:
    """``old`` holds ``stream``, its lease expires (a pause past it), ``new`` takes it
    over; return the token ``old`` still carries."""
    first = (await leases.acquire_leases([stream], old, 0))[stream]
    assert first.owner == old
    taken = (await leases.acquire_leases([stream], new, 30))[stream]
    assert (taken.owner, taken.epoch) == (new, first.epoch + 1)
    return LeaseToken(old, first.epoch)


class _State(msgspec.Struct):
    total: int
    names: list[str]


class StoreContract:
    """The contract tests. Subclass it as ``Test<YourBackend>`` and define ``make_backend``.

    Every test method takes the ``store`` fixture: an :class:`EventStore` opened on a fresh
    backend from ``make_backend`` and closed after the test. Skip or fail from
    ``make_backend`` (``pytest.skip``) when the backend's server is not available.
    """

    pytestmark = [pytest.mark.asyncio]

    async def make_backend(self, tmp_path: Path) -> StorageBackend:
        """A fresh, unopened backend with an empty log; ``tmp_path`` is the test's own."""
        raise NotImplementedError("a StoreContract subclass defines make_backend()")

    @pytest_asyncio.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[EventStore]:
        opened = await open_store(await self.make_backend(tmp_path), registry=contract_registry())
        try:
            yield opened
        finally:
            await opened.close()

    async def test_append_assigns_gapless_positions_and_per_stream_versions(
        self, store: EventStore
    ) -> None:
        a1 = await store.append("s/a", [_noted(1), _noted(2)], expected_version=NO_STREAM)
        b1 = await store.append("s/b", [_noted(3)], expected_version=NO_STREAM)
        a2 = await store.append("s/a", [_noted(4)], expected_version=2)
        assert [e.position for e in a1 + b1 + a2] == [1, 2, 3, 4]
        assert [e.version for e in a1] == [1, 2]
        assert b1[0].version == 1 and a2[0].version == 3
        read = await store.read_stream("s/a")
        assert [e.event for e in read] == [_noted(1), _noted(2), _noted(4)]
        assert await store.stream_version("s/a") == 3
        assert await store.stream_version("s/none") == 0
        assert await store.head_position() == 4

    async def test_envelope_carries_metadata(self, store: EventStore) -> None:
        meta = EventMetadata(correlation_id="turn-1", causation_id="msg-9", actor="session/a/u")
        [recorded] = await store.append("s/meta", [_noted(1)], expected_version=ANY, metadata=meta)
        [read] = await store.read_stream("s/meta")
        assert read == recorded
        assert (read.correlation_id, read.causation_id, read.actor) == (
            "turn-1",
            "msg-9",
            "session/a/u",
        )
        assert read.type == "test.noted" and read.recorded_at > 1_700_000_000

    async def test_read_stream_from_version_and_limit(self, store: EventStore) -> None:
        await store.append("s/r", [_noted(i) for i in range(1, 6)], expected_version=NO_STREAM)
        assert [e.version for e in await store.read_stream("s/r", from_version=3)] == [3, 4, 5]
        assert [e.version for e in await store.read_stream("s/r", 2, limit=2)] == [2, 3]
        assert await store.read_stream("s/empty") == []

    async def test_no_stream_refuses_an_existing_stream(self, store: EventStore) -> None:
        await store.append("s/x", [_noted(1)], expected_version=NO_STREAM)
        with pytest.raises(VersionConflict) as info:
            await store.append("s/x", [_noted(2)], expected_version=NO_STREAM)
        assert (info.value.stream, info.value.expected, info.value.actual) == ("s/x", 0, 1)
        assert len(await store.read_stream("s/x")) == 1

    async def test_exact_version_mismatch_conflicts_and_writes_nothing(
        self, store: EventStore
    ) -> None:
        await store.append("s/x", [_noted(1), _noted(2)], expected_version=NO_STREAM)
        for wrong in (1, 3, 7):
            with pytest.raises(VersionConflict):
                await store.append("s/x", [_noted(9)], expected_version=wrong)
        assert await store.stream_version("s/x") == 2
        assert await store.head_position() == 2

    async def test_any_appends_whatever_the_version(self, store: EventStore) -> None:
        await store.append("s/any", [_noted(1)], expected_version=ANY)
        await store.append("s/any", [_noted(2)], expected_version=ANY)
        assert await store.stream_version("s/any") == 2

    async def test_concurrent_appenders_to_one_stream_exactly_one_wins_each_version(
        self,
        store: EventStore,
    ) -> None:
        winners_per_version: dict[int, int] = {}
        for version in range(5):
            results = await asyncio.gather(
                *(store.append("s/race", [_noted(i)], expected_version=version) for i in range(20)),
                return_exceptions=True,
            )
            wins = [r for r in results if not isinstance(r, BaseException)]
            losses = [r for r in results if isinstance(r, BaseException)]
            assert all(isinstance(e, VersionConflict) for e in losses)
            winners_per_version[version] = len(wins)
        assert winners_per_version == {v: 1 for v in range(5)}
        assert [e.version for e in await store.read_stream("s/race")] == [1, 2, 3, 4, 5]

    async def test_one_conflict_does_not_fail_the_others_in_a_batch(
        self, store: EventStore
    ) -> None:
        await store.append("s/c", [_noted(0)], expected_version=NO_STREAM)
        results = await asyncio.gather(
            store.append("s/ok1", [_noted(1)], expected_version=NO_STREAM),
            store.append("s/c", [_noted(2)], expected_version=NO_STREAM),  # conflicts
            store.append("s/ok2", [_noted(3)], expected_version=NO_STREAM),
            return_exceptions=True,
        )
        assert isinstance(results[1], VersionConflict)
        assert not isinstance(results[0], BaseException) and not isinstance(
            results[2], BaseException
        )
        positions = sorted(e.position for r in (results[0], results[2]) for e in r)  # type: ignore[union-attr]
        assert positions == [2, 3]  # gapless: the refused append consumed no position

    async def test_idempotency_key_repeat_returns_original_and_writes_nothing(
        self,
        store: EventStore,
    ) -> None:
        meta = EventMetadata(idempotency_key="op-1")
        first = await store.append(
            "s/i", [_noted(1), _noted(2)], expected_version=NO_STREAM, metadata=meta
        )
        again = await store.append(
            "s/i", [_noted(1), _noted(2)], expected_version=NO_STREAM, metadata=meta
        )
        assert [e.position for e in again] == [e.position for e in first]
        assert [e.event for e in again] == [e.event for e in first]
        assert await store.head_position() == 2
        with pytest.raises(IdempotencyKeyReused):
            await store.append("s/other", [_noted(3)], expected_version=ANY, metadata=meta)
        assert await store.head_position() == 2

    async def test_idempotency_key_repeated_concurrently_writes_once(
        self, store: EventStore
    ) -> None:
        meta = EventMetadata(idempotency_key="op-2")
        results = await asyncio.gather(
            *(
                store.append("s/i2", [_noted(7)], expected_version=ANY, metadata=meta)
                for _ in range(10)
            )
        )
        assert {r[0].position for r in results} == {1}
        assert await store.head_position() == 1

    async def test_read_all_in_global_order_with_limit_and_filters(self, store: EventStore) -> None:
        await store.append("session/a/1", [_noted(1)], expected_version=ANY)
        await store.append("team/t1", [Counted(amount=2)], expected_version=ANY)
        await store.append("session/a/2", [Counted(amount=3)], expected_version=ANY)
        await store.append("session_x/a", [_noted(4)], expected_version=ANY)
        everything = await store.read_all()
        assert [e.position for e in everything] == [1, 2, 3, 4]
        assert [e.position for e in await store.read_all(2, limit=2)] == [2, 3]
        sessions = await store.read_all(stream_prefix="session/")
        assert [e.stream for e in sessions] == ["session/a/1", "session/a/2"]  # '_' is no wildcard
        counted = await store.read_all(types=["test.counted"])
        assert [e.position for e in counted] == [2, 3]
        both = await store.read_all(stream_prefix="session/", types=["test.counted"])
        assert [e.position for e in both] == [3]
        assert await store.read_all(5) == []

    async def test_subscribe_catches_up_then_follows_live_without_gap_or_duplicate(
        self,
        store: EventStore,
    ) -> None:
        for i in range(30):
            await store.append(f"s/{i % 3}", [_noted(i)], expected_version=ANY)
        total = 230
        seen: list[int] = []

        async def consume() -> None:
            async with store.subscribe(1, batch_size=7) as subscription:
                async for recorded in subscription:
                    seen.append(recorded.position)
                    if len(seen) == total:
                        return

        consumer = asyncio.create_task(consume())

        async def producer(k: int) -> None:
            for i in range(50):
                await store.append(f"live/{k}", [_noted(i)], expected_version=ANY)
                if i % 10 == 0:
                    await asyncio.sleep(0)  # let the consumer interleave with the writers

        await asyncio.gather(*(producer(k) for k in range(4)))
        await asyncio.wait_for(consumer, 60)
        assert seen == list(range(1, total + 1))

    async def test_subscribe_with_filters_skips_unwanted_events(self, store: EventStore) -> None:
        async with store.subscribe(1, types=["test.counted"], stream_prefix="b/") as subscription:
            await store.append("a/1", [Counted(amount=1)], expected_version=ANY)
            await store.append("b/1", [_noted(2)], expected_version=ANY)
            await store.append("b/2", [Counted(amount=3)], expected_version=ANY)
            first = await asyncio.wait_for(anext(subscription), 60)
            assert (first.stream, first.position) == ("b/2", 3)
            await store.append("b/3", [Counted(amount=4)], expected_version=ANY)
            second = await asyncio.wait_for(anext(subscription), 60)
            assert second.position == 4

    async def test_subscription_ends_when_the_store_closes(self, store: EventStore) -> None:
        subscription = store.subscribe(1)
        first = asyncio.Event()

        async def drain() -> int:
            count = 0
            async for _ in subscription:
                count += 1
                first.set()
            return count

        task = asyncio.create_task(drain())
        await store.append("s/1", [_noted(1)], expected_version=ANY)
        await asyncio.wait_for(first.wait(), 60)
        await store.close()
        assert await asyncio.wait_for(task, 60) == 1

    async def test_snapshots_keep_the_latest_per_stream(self, store: EventStore) -> None:
        assert await store.load_snapshot("s/snap", _State) is None
        await store.save_snapshot("s/snap", 3, _State(total=3, names=["a"]))
        await store.save_snapshot("s/snap", 7, _State(total=7, names=["a", "b"]))
        await store.save_snapshot("s/snap", 5, _State(total=5, names=[]))  # older: ignored
        await store.save_snapshot("s/other", 1, _State(total=1, names=[]))
        snapshot = await store.load_snapshot("s/snap", _State)
        assert snapshot is not None
        assert (snapshot.version, snapshot.state) == (7, _State(total=7, names=["a", "b"]))

    async def test_snapshot_of_another_shape_is_ignored(self, store: EventStore) -> None:
        class Other(msgspec.Struct):
            other: str

        await store.save_snapshot("s/snap", 2, _State(total=2, names=[]))
        assert await store.load_snapshot("s/snap", Other) is None

    async def test_upcaster_is_applied_on_read(self, store: EventStore) -> None:
        # Memo is at schema 2; schema 1 called the field "body". Write the old form as bytes.
        old = msgspec.msgpack.encode({"type": "test.memo", "body": "hello"})
        await store.backend.append(
            "s/up", [NewRecord("test.memo", 1, old)], NO_STREAM, EventMetadata()
        )
        store.registry.register_upcaster(
            "test.memo", 1, lambda d: {"type": "test.memo", "text": d["body"], "words": 1}
        )
        await store.append("s/up", [Memo(text="new", words=1)], expected_version=1)
        assert [e.event for e in await store.read_stream("s/up")] == [
            Memo(text="hello", words=1),
            Memo(text="new", words=1),
        ]

    async def test_unknown_tag_is_preserved(self, store: EventStore) -> None:
        await store.append("s/u", [Counted(amount=41)], expected_version=NO_STREAM)
        older_reader = EventStore(store.backend, EventRegistry([Noted]))
        [read] = await older_reader.read_stream("s/u")
        assert isinstance(read.event, UnknownEvent)
        assert read.event.type == "test.counted"
        assert read.event.as_dict() == {"type": "test.counted", "amount": 41}
        [again] = await store.read_stream("s/u")
        assert again.event == Counted(amount=41)

    @pytest.mark.parametrize(
        ("stream", "events", "message"),
        [
            ("s/ok", [], "empty"),
            ("s/ok", [{"type": "test.noted"}], "only events.Event"),
            ("s/ok", [_noted(1), "x"], "only events.Event"),
            ("has space", [_noted(1)], "invalid stream name"),
            ("", [_noted(1)], "invalid stream name"),
            ("a//b", [_noted(1)], "invalid stream name"),
            ("/abs", [_noted(1)], "invalid stream name"),
            ("a/%", [_noted(1)], "invalid stream name"),
            ("nul\x00byte", [_noted(1)], "invalid stream name"),
            ("x" * 257, [_noted(1)], "invalid stream name"),
        ],
    )
    async def test_bad_appends_are_refused_and_write_nothing(
        self, store: EventStore, stream: str, events: list[object], message: str
    ) -> None:
        with pytest.raises(InvalidAppend, match=message):
            await store.append(stream, events, expected_version=ANY)  # type: ignore[arg-type]
        assert await store.head_position() == 0

    async def test_bad_expected_version_is_refused(self, store: EventStore) -> None:
        for bad in (-2, "any", 1.0, None):
            with pytest.raises(InvalidAppend, match="expected_version"):
                await store.append("s/v", [_noted(1)], expected_version=bad)  # type: ignore[arg-type]
        assert await store.head_position() == 0

    async def test_oversized_payload_is_refused_and_writes_nothing(self, store: EventStore) -> None:
        small = EventStore(store.backend, store.registry, max_payload_bytes=1000)
        with pytest.raises(PayloadTooLarge, match="limit is 1000"):
            await small.append("s/big", [_noted(1), Noted(text="y" * 2000)], expected_version=ANY)
        assert await store.head_position() == 0

    async def test_closed_store_refuses_everything_and_close_is_idempotent(
        self, store: EventStore
    ) -> None:
        await store.close()
        await store.close()
        with pytest.raises(StoreClosed):
            await store.append("s/c", [_noted(1)], expected_version=ANY)
        with pytest.raises(StoreClosed):
            await store.read_all()

    # -- corrupt rows: a typed, positioned error that loses no good row -------------------
    async def _log_with_a_corrupt_row(self, store: EventStore) -> None:
        """Positions 1-3 good, 4 a payload that is not msgpack, 5-6 good; streams
        alternate ``c/a`` (odd positions) and ``c/b`` (even positions)."""
        for n in (1, 2, 3):
            await store.append(f"c/{'ab'[(n - 1) % 2]}", [_noted(n)], expected_version=ANY)
        await store.backend.append(
            "c/b", [NewRecord("test.noted", 1, b"\xc1 not msgpack")], ANY, EventMetadata()
        )
        for n in (5, 6):
            await store.append(f"c/{'ab'[(n - 1) % 2]}", [_noted(n)], expected_version=ANY)

    async def test_a_corrupt_row_mid_page_raises_with_the_good_events_before_it(
        self, store: EventStore
    ) -> None:
        await self._log_with_a_corrupt_row(store)
        with pytest.raises(CorruptEvent, match="corrupt event at position 4") as info:
            await store.read_all(1, 10)
        assert (info.value.position, info.value.stream, info.value.type) == (4, "c/b", "test.noted")
        assert [(e.position, e.event) for e in info.value.events] == [
            (n, _noted(n)) for n in (1, 2, 3)
        ]
        assert [e.position for e in await store.read_all(info.value.position + 1)] == [5, 6]
        with pytest.raises(CorruptEvent) as again:  # at the row itself: nothing before it
            await store.read_all(4)
        assert (again.value.position, again.value.events) == (4, [])
        with pytest.raises(CorruptEvent) as filtered:
            await store.read_all(1, stream_prefix="c/b")
        assert [e.position for e in filtered.value.events] == [2]
        with pytest.raises(CorruptEvent) as by_stream:
            await store.read_stream("c/b")
        assert by_stream.value.position == 4
        assert [e.version for e in by_stream.value.events] == [1]
        assert [e.position for e in await store.read_stream("c/b", 3)] == [6]

    async def test_an_upcast_that_does_not_decode_is_corrupt_with_the_events_before_it(
        self, store: EventStore
    ) -> None:
        await store.append("u/1", [_noted(1), _noted(2)], expected_version=NO_STREAM)
        # Shaped like a current Memo, so the page's fast pass decodes it; its schema 1
        # sends it through the upcaster, whose output does not decode.
        old = msgspec.msgpack.encode({"type": "test.memo", "text": "x"})
        await store.backend.append("u/1", [NewRecord("test.memo", 1, old)], 2, EventMetadata())
        await store.append("u/1", [_noted(4)], expected_version=3)
        store.registry.register_upcaster("test.memo", 1, lambda d: {**d, "text": 5})
        with pytest.raises(CorruptEvent) as info:
            await store.read_all()
        assert info.value.position == 3
        assert [e.position for e in info.value.events] == [1, 2]
        assert [e.position for e in await store.read_all(4)] == [4]

    async def test_a_subscription_delivers_the_good_events_then_stops_at_a_corrupt_row(
        self, store: EventStore
    ) -> None:
        await self._log_with_a_corrupt_row(store)
        async with store.subscribe(1) as subscription:
            assert [(await anext(subscription)).position for _ in range(3)] == [1, 2, 3]
            for _ in range(2):  # it stays at the row: each call meets it again
                with pytest.raises(CorruptEvent) as info:
                    await asyncio.wait_for(anext(subscription), 60)
                assert (info.value.position, info.value.events) == (4, [])
            assert subscription.next_position == 4
            with pytest.raises(CorruptEvent):
                await asyncio.wait_for(subscription.next_batch(), 60)

    async def test_a_subscription_that_skips_corrupt_rows_lists_them_and_goes_live(
        self, store: EventStore
    ) -> None:
        await self._log_with_a_corrupt_row(store)
        async with store.subscribe(1, batch_size=2, skip_corrupt=True) as subscription:
            seen = [(await asyncio.wait_for(anext(subscription), 60)).position for _ in range(5)]
            assert seen == [1, 2, 3, 5, 6]
            assert subscription.skipped == [4]
            await store.append("c/live", [_noted(7)], expected_version=ANY)
            assert (await asyncio.wait_for(anext(subscription), 60)).position == 7

    async def test_log_pages_hand_over_the_good_rows_then_raise_at_a_corrupt_one(
        self, store: EventStore
    ) -> None:
        await self._log_with_a_corrupt_row(store)
        pages: list[list[int]] = []
        with pytest.raises(CorruptEvent) as info:
            async for page in LogPages(store, page_size=2):
                pages.append([e.position for e in page])
        assert (pages, info.value.position) == ([[1, 2], [3]], 4)
        walk = LogPages(store, 2, page_size=10, skip_corrupt=True)
        assert [[e.position for e in page] async for page in walk] == [[2, 3], [5, 6]]
        assert (walk.skipped, walk.damaged) == ([4], [])
        before = LogPages(store, stop=3)  # the corrupt row is past the range: no error
        assert [[e.position for e in page] async for page in before] == [[1, 2, 3]]
        # a filtered read looks past stop and meets the row: still no error
        odd = LogPages(store, stop=3, stream_prefix="c/a")
        assert [[e.position for e in page] async for page in odd] == [[1, 3]]

    async def test_log_pages_walk_a_range_with_filters_in_bounded_pages(
        self, store: EventStore
    ) -> None:
        for n in range(1, 21):
            event = Counted(amount=n) if n % 3 == 0 else _noted(n)
            await store.append(f"w/{n % 2}", [event], expected_version=ANY)

        async def positions(pages: LogPages) -> list[list[int]]:
            return [[e.position for e in page] async for page in pages]

        assert await positions(LogPages(store, page_size=8)) == [
            list(range(1, 9)),
            list(range(9, 17)),
            list(range(17, 21)),
        ]
        assert await positions(LogPages(store, 5, stop=9, page_size=3)) == [
            [5, 6, 7],
            [8, 9],
        ]
        counted = LogPages(store, 2, stop=16, types=["test.counted"], page_size=2)
        assert await positions(counted) == [[3, 6], [9, 12], [15]]
        odd = LogPages(store, stream_prefix="w/1", stop=7, page_size=100)
        assert await positions(odd) == [[1, 3, 5, 7]]
        assert await positions(LogPages(store, 21)) == []
        assert await positions(LogPages(store, 5, stop=4)) == []
        for name, bad in (("start", 0), ("page_size", 0), ("stop", -1), ("types", "test.noted")):
            with pytest.raises(ValueError, match=f"^{name} must be"):
                LogPages(store, **{name: bad})  # type: ignore[arg-type]

    # -- leases and fenced appends (backends several processes write) ---------------------
    async def test_a_lease_token_never_stops_an_append_to_a_stream_nobody_leased(
        self, store: EventStore
    ) -> None:
        token = LeaseToken("proc-a", 7)  # ignored by a backend one process writes
        await store.append("l/free", [_noted(1)], NO_STREAM, lease=token)
        with pytest.raises(VersionConflict):  # the expected version still applies
            await store.append("l/free", [_noted(2)], NO_STREAM, lease=token)
        assert [e.version for e in await store.read_stream("l/free")] == [1]

    async def test_lease_epochs_rise_with_each_new_holder_and_never_repeat(
        self, store: EventStore
    ) -> None:
        leases = _leases(store)
        got = await leases.acquire_leases(["l/a", "l/b", "l/a"], "proc-a", 30)
        assert {s: (x.owner, x.epoch) for s, x in got.items()} == {
            "l/a": ("proc-a", 1),
            "l/b": ("proc-a", 1),
        }
        again = (await leases.acquire_leases(["l/a"], "proc-a", 30))["l/a"]
        assert again.epoch == 1 and again.expires_at >= got["l/a"].expires_at
        refused = (await leases.acquire_leases(["l/a"], "proc-b", 30))["l/a"]
        assert (refused.owner, refused.epoch) == ("proc-a", 1)  # held, unexpired
        epochs = [1]
        await _taken_over(leases, "l/a", "proc-a", "proc-b")  # expired, then taken
        epochs.append((await leases.leases(["l/a"]))["l/a"].epoch)
        for owner in ("proc-a", "proc-c", "proc-c", "proc-b"):
            await leases.release_leases(["l/a"], (await leases.leases(["l/a"]))["l/a"].owner)
            taken = (await leases.acquire_leases(["l/a"], owner, 30))["l/a"]
            assert taken.owner == owner
            epochs.append(taken.epoch)
        # a release keeps the epoch: the same holder taking it back keeps it too
        assert epochs == [1, 2, 3, 4, 4, 5]
        current = await leases.leases(["l/a", "l/b", "l/never"])
        assert set(current) == {"l/a", "l/b"}
        assert (current["l/a"].owner, current["l/a"].epoch) == ("proc-b", 5)
        assert (current["l/b"].owner, current["l/b"].epoch) == ("proc-a", 1)

    async def test_an_append_with_a_stale_lease_is_fenced_and_writes_nothing(
        self, store: EventStore
    ) -> None:
        leases = _leases(store)
        key = EventMetadata(idempotency_key="l-once")
        first = await leases.acquire_leases(["l/f"], "proc-a", 30)
        token_a = LeaseToken("proc-a", first["l/f"].epoch)
        written = await store.append("l/f", [_noted(1)], NO_STREAM, key, lease=token_a)
        stale = await _taken_over(leases, "l/f", "proc-a", "proc-b")
        assert stale == token_a
        for expected in (1, ANY, 7):  # the fast path and the checked one
            with pytest.raises(Fenced, match=r"'proc-b' \(lease epoch 2\)") as info:
                await store.append("l/f", [_noted(2)], expected, lease=stale)
            fenced = info.value
            assert (fenced.stream, fenced.holder, fenced.epoch) == ("l/f", "proc-b", 2)
            assert fenced.token == stale
        # a retry of an append written before the takeover is answered as written
        again = await store.append("l/f", [_noted(1)], NO_STREAM, key, lease=stale)
        assert [e.position for e in again] == [e.position for e in written]
        assert await store.head_position() == 1
        [next_event] = await store.append("l/f", [_noted(3)], 1, lease=LeaseToken("proc-b", 2))
        assert (next_event.position, next_event.version) == (2, 2)  # gapless
        assert [e.event for e in await store.read_stream("l/f")] == [_noted(1), _noted(3)]

    async def test_only_the_fenced_append_of_a_batch_fails(self, store: EventStore) -> None:
        leases = _leases(store)
        await leases.acquire_leases(["l/ok", "l/old"], "proc-a", 30)
        await store.append("l/old", [_noted(0)], NO_STREAM, lease=LeaseToken("proc-a", 1))
        stale = await _taken_over(leases, "l/old", "proc-a", "proc-b")
        for expected in (ANY, 9):  # a batch the writer can guess, and one it cannot
            results = await asyncio.gather(
                store.append("l/ok", [_noted(1)], ANY, lease=LeaseToken("proc-a", 1)),
                store.append("l/old", [_noted(2), _noted(3)], expected, lease=stale),
                store.append("l/plain", [_noted(4)], ANY),
                store.append("l/unleased", [_noted(5)], ANY, lease=LeaseToken("proc-a", 1)),
                return_exceptions=True,
            )
            assert isinstance(results[1], Fenced) and results[1].holder == "proc-b"
            written = [r for i, r in enumerate(results) if i != 1]
            assert all(isinstance(r, list) for r in written), results
        positions = [e.position for e in await store.read_all(1, 100)]
        assert positions == list(range(1, 8))  # 1 + 2 batches of 3: the refused used none
        assert await store.stream_version("l/old") == 1

    async def test_renew_extends_only_the_leases_still_held(self, store: EventStore) -> None:
        leases = _leases(store)
        await leases.acquire_leases(["l/kept", "l/gone", "l/freed"], "proc-a", 30)
        late = (await leases.acquire_leases(["l/late"], "proc-a", 0))["l/late"]
        await _taken_over(leases, "l/gone", "proc-a", "proc-b")
        await leases.release_leases(["l/freed"], "proc-a")
        renewed = await leases.renew_leases("proc-a", 30)
        # expired but not taken over: still proc-a's, renewed at the same epoch
        assert sorted(renewed) == ["l/kept", "l/late"]
        now = await leases.leases(["l/late", "l/freed", "l/gone"])
        assert now["l/late"].expires_at > late.expires_at and now["l/late"].epoch == 1
        assert await leases.renew_leases("proc-b", 30) == ["l/gone"]
        assert await leases.renew_leases("proc-nobody", 30) == []
        assert now["l/freed"].owner == "proc-a"  # released: kept, expired, not renewed
        assert await leases.expired_leases("l/") == []  # nothing left behind
        await leases.release_leases(None, "proc-a")
        assert await leases.renew_leases("proc-a", 30) == []

    async def test_expired_leases_lists_the_unreleased_expired_ones_under_a_prefix(
        self, store: EventStore
    ) -> None:
        leases = _leases(store)
        await leases.acquire_leases(["orph/x/live", "orph/xy/1"], "proc-a", 30)
        await leases.acquire_leases(["orph/x/1"], "proc-a", 0)
        await leases.acquire_leases(["orph/x/2", "orph/y/1"], "proc-b", 0)
        await leases.acquire_leases(["orph/x/freed"], "proc-a", 0)
        await leases.release_leases(["orph/x/freed"], "proc-a")
        await leases.acquire_leases(["orph/x/3"], "proc-a", 0)
        found = await leases.expired_leases("orph/x/")
        assert [x.stream for x in found] == ["orph/x/1", "orph/x/2", "orph/x/3"]
        assert [x.expires_at for x in found] == sorted(x.expires_at for x in found)
        assert [x.owner for x in found] == ["proc-a", "proc-b", "proc-a"]
        assert [x.stream for x in await leases.expired_leases("orph/x/", limit=1)] == ["orph/x/1"]
        await leases.acquire_leases(["orph/x/1"], "proc-c", 30)  # taken over: live again
        found = await leases.expired_leases("orph/")
        assert [x.stream for x in found] == ["orph/x/2", "orph/y/1", "orph/x/3"]
        assert await leases.expired_leases("none/") == []
