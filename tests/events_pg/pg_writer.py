"""A second process appending to one stream of a PostgreSQL log at exact versions."""

from __future__ import annotations

import asyncio
import sys

from clawlog.events import EventRegistry, VersionConflict, open_store
from clawlog.events.backends.postgres import PostgresBackend
from clawlog.events.testing import Noted


async def main(url: str, schema: str, who: str, versions: int) -> None:
    store = await open_store(PostgresBackend(url, schema=schema), registry=EventRegistry([Noted]))
    wins = 0
    for version in range(versions):
        try:
            await store.append("race/one", [Noted(text=who, n=version)], expected_version=version)
            wins += 1
        except VersionConflict:
            pass
    print(wins)
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
