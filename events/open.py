"""Open an event store from a location string.

A backend's module is imported when a location names it, so importing this module loads
no database driver.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .backends.base import StorageBackend
from .domain import default_registry
from .errors import MissingDependency
from .registry import EventRegistry
from .store import DEFAULT_MAX_PAYLOAD_BYTES, EventStore

__all__ = ["backend_for", "open_store"]


def backend_for(location: str | Path, **options: Any) -> StorageBackend:
    """The backend a location names: ``memory:``, ``postgresql://…`` or an SQLite path."""
    text = str(location)
    if text == "memory:":
        from .backends.memory import MemoryBackend

        return MemoryBackend()
    if text.startswith(("postgresql://", "postgres://")):
        try:
            from .backends.postgres import PostgresBackend  # asyncpg is optional
        except ImportError as exc:
            raise MissingDependency(
                "PostgreSQL logs need asyncpg: pip install 'clawlog[postgres]'"
            ) from exc
        return PostgresBackend(text, **options)
    if not text or text.startswith(("http://", "https://")):
        raise ValueError(
            f"not a store location: {text!r} (an SQLite path, memory: or postgresql://)"
        )
    from .backends.sqlite import SqliteBackend

    return SqliteBackend(Path(text), **options)


async def open_store(
    location: str | Path | StorageBackend,
    *,
    registry: EventRegistry | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    **backend_options: Any,
) -> EventStore:
    """Open (creating if needed) the event store at ``location`` and return it.

    ``location`` is an SQLite file path (the embedded default), ``"memory:"``, a
    ``postgresql://`` URL, or an unopened backend instance. Use it as an async context
    manager or call ``await store.close()``.
    """
    backend = (
        location
        if not isinstance(location, str | Path)
        else backend_for(location, **backend_options)
    )
    await backend.open()
    return EventStore(backend, registry or default_registry(), max_payload_bytes=max_payload_bytes)
