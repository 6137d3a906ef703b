"""The log and its read models, opened once per app and shared by every page.

The log is opened read-only (writers keep running). A :class:`ProjectionRunner` catches
the read models up, then follows the log live, in the views file the CLI readers share
(``<log>.views.db`` next to an SQLite log); where that file cannot be used (a read-only
copy of a log, a damaged file) it builds them in a temporary file instead. Before a page
reads, :meth:`Console.fresh` waits (briefly) for the models to reach the log's head as of
the request, so a page shows what the log holds when it is asked for.
"""

from __future__ import annotations

import contextlib
import sqlite3
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from clawlog.events import EventStore
from clawlog.events.logging import get_logger
from clawlog.projections import (
    ALL_PROJECTIONS,
    NotCaughtUp,
    ProjectionError,
    ProjectionFailed,
    ProjectionRunner,
    ReadModels,
)

from .config import ConsoleConfig
from .errors import ConsoleError

__all__ = ["Console", "open_console"]

_log = get_logger(__name__)

#: How long a page waits for the read models to reach the log's head before it renders
#: what they hold (with a "catching up" note): the first catch-up of a big log is slow.
FRESH_WAIT = 5.0


class Console:
    """The open log (``store``), its read models (``models``) and their runner."""

    def __init__(
        self, config: ConsoleConfig, store: EventStore, runner: ProjectionRunner, models: ReadModels
    ) -> None:
        self.config = config
        self.store = store
        self.runner = runner
        self.models = models

    async def fresh(self, head: int | None = None, timeout: float = FRESH_WAIT) -> bool:
        """Wait until the read models hold the log up to ``head`` (default: the head as
        of now); False if they are still behind after ``timeout`` seconds (the page then
        says so)."""
        if head is None:
            head = await self.store.head_position()
        try:
            await self.models.wait_until(head, timeout)
        except NotCaughtUp:
            return False
        except ProjectionFailed as exc:
            _log.warning("a read model failed", error=str(exc))
            return False
        return True

    def failures(self) -> list[str]:
        """Read models that stopped on an event, as lines fit for a page."""
        return [
            f"{s.name} stopped at position {s.failed_at}: {s.error}"
            for s in self.runner.statuses()
            if s.status == "failed"
        ]


@contextlib.asynccontextmanager
async def open_console(config: ConsoleConfig) -> AsyncIterator[Console]:
    """Open the log read-only, start the read models' runner, and close both after."""
    from clawlog.cli.logfile import open_log  # the CLI's one-line errors for every mistake
    from clawlog.cli.views import default_views_path

    async with open_log(config.db, read_only=True) as store:
        path = config.views or default_views_path(store)
        async with contextlib.AsyncExitStack() as stack:
            try:
                runner = await _start_runner(stack, store, path)
            except (OSError, ProjectionError, sqlite3.Error) as exc:
                _log.info(
                    "cannot use the read models file: building them in a temporary file",
                    views=str(path),
                    error=" ".join(str(exc).split()),
                )
                scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="clawlog-ui-"))
                try:
                    runner = await _start_runner(stack, store, Path(scratch) / "views.db")
                except (OSError, ProjectionError, sqlite3.Error) as again:
                    raise ConsoleError(
                        f"cannot build the read models, neither in {path} nor in a temporary "
                        f"file: {again}"
                    ) from again
            models = await stack.enter_async_context(ReadModels(runner.path, runner=runner))
            yield Console(config, store, runner, models)


async def _start_runner(
    stack: contextlib.AsyncExitStack, store: EventStore, path: Path
) -> ProjectionRunner:
    runner = ProjectionRunner(store, path, [p() for p in ALL_PROJECTIONS])
    await runner.open()
    stack.push_async_callback(runner.aclose)
    runner.start()
    return runner
