"""The read models behind the reader commands: caught up with the log, then queried.

The readers (``history``, ``board``, ``routes``, ``audit``, ``delegations``) query the
projections' read models rather than folding the log themselves, as any dashboard would.
Before a command reads, a projection runner brings the read model it queries up to the
log's head: in ``clawlog.views.db`` next to an SQLite log (created on first use, then only
the new events are applied), or a per-database file under ``~/.cache/clawlog`` for
PostgreSQL.
Where that file cannot be written (a read-only copy of a log), the models are built in a
temporary file instead. The log itself is never written.
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from clawlog.events import EventStore
from clawlog.projections import (
    ALL_PROJECTIONS,
    ProjectionError,
    ProjectionRunner,
    ReadModels,
    views_path_for,
)

from .errors import CliError

__all__ = ["default_views_path", "read_models"]


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
    store: EventStore, needs: str, views: Path | None = None
) -> AsyncIterator[ReadModels]:
    """Read models of ``store`` caught up to its head as of now; ``needs`` names the
    projection the command reads, whose failure is reported as the command's error."""
    path = views or default_views_path(store)
    try:
        await _catch_up(store, path, needs)
    except (OSError, ProjectionError) as exc:
        if views is not None:
            raise CliError(f"cannot bring the read models in {path} up to date: {exc}") from exc
        with tempfile.TemporaryDirectory(prefix="clawlog-views-") as scratch:
            fallback = Path(scratch) / "views.db"
            await _catch_up(store, fallback, needs)
            async with ReadModels(fallback) as models:
                yield models
            return
    async with ReadModels(path) as models:
        yield models


async def _catch_up(store: EventStore, path: Path, needs: str) -> None:
    # Only the read model the command queries: each keeps its own checkpoint, so the
    # others catch up whenever a command reads them (and reads only their event types).
    wanted = [p() for p in ALL_PROJECTIONS if p.name == needs]
    if not wanted:
        raise ValueError(f"no read model named {needs!r}")
    async with ProjectionRunner(store, path, wanted) as runner:
        await runner.catch_up()
        [status] = runner.statuses()
    if status.status == "failed":
        raise CliError(
            f"read model {needs!r} failed at position {status.failed_at}: {status.error} "
            "(run `clawlog rebuild` once the cause is fixed)"
        )
