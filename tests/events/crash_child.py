"""Appends forever with concurrent producers, printing each acknowledged append.

Run by test_crash_safety.py, which kills it with SIGKILL mid-stream.
"""

from __future__ import annotations

import asyncio
import sys

from events import ANY, EventRegistry, open_store
from tests.contracts.sample_events import Noted


async def main(path: str) -> None:
    store = await open_store(path, registry=EventRegistry([Noted]))

    async def producer(k: int) -> None:
        i = 0
        while True:
            i += 1
            [recorded] = await store.append(
                f"crash/{k}", [Noted(text=f"p{k}-{i}", n=i)], expected_version=ANY
            )
            sys.stdout.write(f"{recorded.stream} {recorded.version} {recorded.position} p{k}-{i}\n")
            sys.stdout.flush()

    await asyncio.gather(*(producer(k) for k in range(8)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
