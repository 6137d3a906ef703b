"""Holds an SQLite log open for writing in another process, appending on command.

Run by test_sqlite_file.py. Prints ``ready`` once the store is open, then for each
line ``<stream> <text>`` on stdin appends one event and prints ``ok <position>``. Closes
the store and exits at end of input.
"""

from __future__ import annotations

import asyncio
import sys

from clawlog.events import ANY, EventRegistry, open_store
from clawlog.events.testing import Noted


async def main(path: str) -> None:
    loop = asyncio.get_running_loop()
    async with await open_store(path, registry=EventRegistry([Noted])) as store:
        print("ready", flush=True)
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            stream, text = line.split()
            [recorded] = await store.append(stream, [Noted(text=text)], ANY)
            print("ok", recorded.position, flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
