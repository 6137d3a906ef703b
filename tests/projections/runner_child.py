"""A projection runner in its own process, following a log another process writes.

    python -m tests.projections.runner_child LOG VIEWS [--stop-at N]

Prints ``ready`` once caught up and following; with ``--stop-at`` it blocks inside the
batch holding that position (PositionLog). Run by the crash and cross-process tests,
which end it with a signal.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import structlog

from clawlog.events import SqliteBackend, open_store
from clawlog.projections import Projection, ProjectionRunner
from clawlog.projections.read_models.session_history import SessionHistory
from tests.projections.support import PositionLog


async def main() -> None:
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("views")
    parser.add_argument("--stop-at", type=int, default=None)
    args = parser.parse_args()
    store = await open_store(SqliteBackend(args.log, read_only=True, poll_interval=0.005))
    projections: list[Projection] = [PositionLog(stop_at=args.stop_at), SessionHistory()]
    async with store, ProjectionRunner(store, args.views, projections, batch_size=100) as runner:
        await runner.catch_up()
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        await runner.run()


if __name__ == "__main__":
    asyncio.run(main())
