"""A projection-runner process following a PostgreSQL log live into an SQLite file.

    python -m tests.events_pg.pg_projection_runner URL SCHEMA VIEWS

Prints ``ready`` once caught up and following; runs until its stdin closes.
"""

from __future__ import annotations

import asyncio
import sys

from clawlog.events import open_store
from clawlog.events.backends.postgres import PostgresBackend
from clawlog.projections import ALL_PROJECTIONS, ProjectionRunner


async def main(url: str, schema: str, views: str) -> None:
    store = await open_store(PostgresBackend(url, schema=schema))
    projections = [p() for p in ALL_PROJECTIONS]
    async with store, ProjectionRunner(store, views, projections, batch_size=50) as runner:
        await runner.catch_up()
        following = runner.start()
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        # The parent closes our stdin to stop us.
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        assert not following.done(), following
        await runner.stop()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
