"""Who an agent may delegate to: DELEGATION.md and ``delegate_search`` (SQLite FTS5)."""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Callable

import msgspec

from ..agents.config import AgentConfig
from ..agents.gateway import CallerContext

__all__ = ["INLINE_LIMIT", "DelegationDirectory", "Embedder", "Target"]

#: Seed 001 §7: up to 15 targets are listed inline; more → use delegate_search.
INLINE_LIMIT = 15


class Target(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    name: str = ""
    description: str = ""


#: Turns texts into vectors (an embedding model); optional.
Embedder = Callable[[list[str]], list[list[float]]]


class DelegationDirectory:
    """Links by source, target descriptions, and a full-text index over them; with an
    ``embedder`` configured, search blends the full-text rank with cosine similarity."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder
        self._vectors: dict[str, list[float]] = {}
        self._lock = threading.Lock()
        self._targets: dict[str, list[str]] = {}
        self._info: dict[str, Target] = {}
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE targets USING fts5(key UNINDEXED, name, description)"
        )

    def describe(self, config: AgentConfig) -> None:
        target = Target(key=config.key, name=config.name, description=config.description)
        with self._lock:
            self._info[config.key] = target
            self._db.execute("DELETE FROM targets WHERE key = ?", (config.key,))
            self._db.execute(
                "INSERT INTO targets VALUES (?, ?, ?)",
                (target.key, target.name, target.description),
            )
        if self.embedder is not None:
            [vector] = self.embedder([f"{target.name}. {target.description}"])
            with self._lock:
                self._vectors[config.key] = vector

    def add_link(self, source: str, target: str) -> None:
        with self._lock:
            targets = self._targets.setdefault(source, [])
            if target not in targets:
                targets.append(target)

    def targets(self, source: str) -> list[Target]:
        with self._lock:
            return [self._info.get(k, Target(key=k)) for k in self._targets.get(source, [])]

    def search(self, source: str, query: str, limit: int = 10) -> list[Target]:
        """Targets of ``source`` ranked by bm25 over name and description (and, with an
        embedder, by the mean of the two ranks: full text and cosine similarity)."""
        terms = [t for t in "".join(c if c.isalnum() else " " for c in query).split() if t]
        with self._lock:
            allowed = set(self._targets.get(source, []))
            if not terms or not allowed:
                return []
            rows = self._db.execute(
                "SELECT key FROM targets WHERE targets MATCH ? ORDER BY bm25(targets, 0, 3.0, 1.0)",
                (" OR ".join(f'"{t}"' for t in terms),),
            ).fetchall()
            text_ranked = [row[0] for row in rows if row[0] in allowed]
            vectors = {k: v for k, v in self._vectors.items() if k in allowed}
        if self.embedder is None or not vectors:
            return [self._info[k] for k in text_ranked[:limit]]
        [probe] = self.embedder([query])
        similarity = {k: _cosine(probe, v) for k, v in vectors.items()}
        by_meaning = sorted(vectors, key=lambda k: -similarity[k])
        worst = len(allowed)
        candidates = set(text_ranked) | {k for k, v in similarity.items() if v > 0}

        def rank(key: str) -> float:
            text = text_ranked.index(key) if key in text_ranked else worst
            meaning = by_meaning.index(key) if key in similarity else worst
            return (text + meaning) / 2

        ranked = sorted(candidates, key=lambda k: (rank(k), k))
        return [self._info[k] for k in ranked[:limit]]

    def prompt_section(self, config: AgentConfig, ctx: CallerContext) -> tuple[str, str] | None:
        targets = self.targets(config.key)
        if not targets:
            return None
        if len(targets) > INLINE_LIMIT:
            body = (
                f"You can delegate to {len(targets)} agents. Use the delegate_search tool "
                "with a few words about the task to find the right one, then delegate "
                "to it with the delegate tool."
            )
        else:
            lines = ["You can delegate tasks to these agents with the delegate tool:"]
            lines += [
                f"- `{t.key}`"
                + (f" ({t.name})" if t.name else "")
                + (f": {t.description}" if t.description else "")
                for t in targets
            ]
            body = "\n".join(lines)
        return "DELEGATION.md", body

    def close(self) -> None:
        self._db.close()


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
