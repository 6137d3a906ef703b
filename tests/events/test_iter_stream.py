"""EventStore.iter_stream: a whole stream, a page at a time."""

from __future__ import annotations

from pathlib import Path

from clawlog.events import EventMetadata, open_store
from clawlog.events.domain.session import TurnCompleted


async def test_iter_stream_reads_every_event_across_pages_and_from_a_version(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path / "log.db")
    try:
        for n in range(7):
            event = TurnCompleted(turn_id=f"t{n}", reply=str(n), iterations=1)
            await store.append("session/a/b", [event], n, EventMetadata())
        await store.append(
            "session/a/other", [TurnCompleted(turn_id="x", reply="", iterations=1)], 0
        )
        every = [r.event.turn_id async for r in store.iter_stream("session/a/b", page_size=3)]
        assert every == [f"t{n}" for n in range(7)]
        later = [r.version async for r in store.iter_stream("session/a/b", 6, page_size=3)]
        assert later == [6, 7]
        assert [r async for r in store.iter_stream("session/a/none")] == []
    finally:
        await store.close()
