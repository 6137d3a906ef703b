"""The read models behind the reader commands: caught up with the log, then queried.

The readers (``history``, ``board``, ``routes``, ``audit``, ``delegations``, ``mcp``) query
the projections' read models rather than folding the log themselves, as any dashboard
would. Before a command reads, a projection runner brings the read model it queries up to
the log's head: in ``<log>.views.db`` next to an SQLite log ``<log>.db`` (created on
first use, then only the new events are applied), or a per-database file under
``~/.cache/clawlog`` for PostgreSQL. The log itself is never written.

Where that file cannot be written or read -- a read-only copy of a log, a full disk
(SQLite's "database or disk is full", at the first write or in the middle of a catch-up),
a damaged views file -- the model is built in a temporary file instead, from position 1.
A file that is there but unusable gets a warning naming it and why (that catch-up from 1
is slow on a big log, and paid on every run); one that cannot be made (a read-only copy)
is expected, and said at ``-v`` only.

``--skip-corrupt`` always builds in a temporary file, never in the shared one: a runner
that skips a corrupt row moves its checkpoint past it for good, and the shared file is
also what the other readers (and an application's own runner) use. Had the skip been
written there, they would no longer hear of the damage, and a later repair of the log
(a restored backup) would not reach the model until a rebuild. The price is a full
catch-up of the one model the command reads, on every such run (about as long as the
first ``clawlog audit`` on the log: see BENCHMARKS.md), which is acceptable for a flag
used to look at a damaged log.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from clawlog.events import EventStore
from clawlog.events.logging import get_logger
from clawlog.projections import (
    ALL_PROJECTIONS,
    ProjectionError,
    ProjectionRunner,
    ReadModels,
    views_path_for,
)
from clawlog.projections.timeline import Skipped

from .errors import CliError

__all__ = ["default_views_path", "read_models"]

_log = get_logger(__name__)

#: Failures of the views file itself: unwritable, full, foreign or damaged.
_VIEWS_ERRORS = (OSError, ProjectionError, sqlite3.Error)


def default_views_path(store: EventStore) -> Path:
    """Where the read models of ``store``'s log live by default."""
    log_path = getattr(store.backend, "path", None)
    if log_path is not None:
        return views_path_for(log_path)
    identity = f"{getattr(store.backend, 'url', '')}#{getattr(store.backend, 'schema', '')}"
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return Path.home() / ".cache" / "clawlog" / f"views-{digest}.db"


@contextlib.asynccontextmanager
async def read_models(
    store: EventStore, needs: str, *, skip: Skipped | None = None
) -> AsyncIterator[ReadModels]:
    """Read models of ``store`` caught up to its head as of now; ``needs`` names the
    projection the command reads, whose failure is reported as the command's error.
    With ``skip``, corrupt events are stepped over (in a temporary file) and their
    positions recorded in it."""
    path = default_views_path(store)
    if skip is None:
        try:
            await _catch_up(store, path, needs, None)
        except _VIEWS_ERRORS as exc:  # not the log's: its errors are EventStoreErrors
            # A file that is there but unusable (damaged, foreign, full) is worth a warning:
            # every run pays a catch-up from 1 until it is replaced. One that cannot be
            # made (a read-only copy of the log) is expected: said at -v only.
            log = _log.warning if path.exists() else _log.info
            log(
                "cannot use the read models file: building them in a temporary file, from "
                "position 1, on every run until the file is fixed or moved away",
                views=str(path),
                error=_one_line(exc),
            )
        else:
            async with _reading(path) as models:
                yield models
            return
    with tempfile.TemporaryDirectory(prefix="clawlog-views-") as scratch:
        fallback = Path(scratch) / "views.db"
        try:
            await _catch_up(store, fallback, needs, skip)
        except _VIEWS_ERRORS as exc:
            raise CliError(
                f"cannot build the read model {needs!r}, neither in {path} nor in a "
                f"temporary file: {_one_line(exc)}"
            ) from exc
        async with _reading(fallback) as models:
            yield models


@contextlib.asynccontextmanager
async def _reading(path: Path) -> AsyncIterator[ReadModels]:
    # Not OSError: in the command's body that is stdout's (a closed pipe), not the file's.
    try:
        async with ReadModels(path) as models:
            yield models
    except (ProjectionError, sqlite3.Error) as exc:
        raise CliError(f"cannot read the read models in {path}: {_one_line(exc)}") from exc


async def _catch_up(store: EventStore, path: Path, needs: str, skip: Skipped | None) -> None:
    # Only the read model the command queries: each keeps its own checkpoint, so the
    # others catch up whenever a command reads them (and reads only their event types).
    wanted = [p() for p in ALL_PROJECTIONS if p.name == needs]
    if not wanted:
        raise ValueError(f"no read model named {needs!r}")
    async with ProjectionRunner(store, path, wanted, skip_corrupt=skip is not None) as runner:
        try:
            await runner.catch_up()
        finally:
            if skip is not None:
                skip.positions.extend(sorted(runner.skipped))
                skip.damaged.extend(runner.damaged)
        [status] = runner.statuses()
    if status.status == "failed":
        if "corrupt" in (status.error or ""):  # a row of the log cannot be fixed
            hint = (
                "--skip-corrupt steps over it for this run, `clawlog rebuild --skip-corrupt` "
                "for good"
            )
        else:
            hint = "`clawlog rebuild` once the cause is fixed"
        raise CliError(
            f"read model {needs!r} failed at position {status.failed_at}: {status.error} ({hint})"
        )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
