"""Appends forever with concurrent producers, printing each acknowledged append.

Run by test_crash_safety.py, which kills it with SIGKILL mid-stream. Each append holds
1 to 3 events; every third one carries metadata and an idempotency key, so batches mix
both insert statements. One line per acknowledged append, flushed before the next:
``<stream> <first version> <first position> <count> <tag>``; event ``j`` of the append
has the text ``<tag>#<j>``.
"""

from __future__ import annotations

import asyncio
import sys

from clawlog.events import ANY, EventMetadata, EventRegistry, open_store
from clawlog.events.testing import Noted

PRODUCERS = 8


def append_of(producer: int, i: int) -> tuple[str, list[Noted], EventMetadata | None]:
    """The ``i``-th append of ``producer``: what the parent expects to find after a crash."""
    count = 1 + i % 3
    tag = f"p{producer}-{i}/{count}"
    events = [Noted(text=f"{tag}#{j}", n=i) for j in range(count)]
    meta = EventMetadata(actor=f"producer/{producer}", idempotency_key=tag) if i % 3 == 0 else None
    return f"crash/{producer}", events, meta


async def main(path: str) -> None:
    store = await open_store(path, registry=EventRegistry([Noted]))
    out = sys.stdout

    async def producer(k: int) -> None:
        i = 0
        while True:
            i += 1
            stream, events, meta = append_of(k, i)
            recorded = await store.append(stream, events, ANY, meta)
            tag = events[0].text.split("#")[0]
            out.write(
                f"{stream} {recorded[0].version} {recorded[0].position} {len(events)} {tag}\n"
            )
            out.flush()

    await asyncio.gather(*(producer(k) for k in range(PRODUCERS)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
