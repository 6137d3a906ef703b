"""Projection rebuild benchmark (issue 8): rebuild every read model from a mixed log,
against a raw read + msgpack decode of the same log, in one run.

    python3 scripts/bench_projections.py [--quick] [--events N]
        full: 200k events; --quick: 30k (well under 60 s)

The log (sessions with tool calls that complete, are refused, wait for approval, fail or
loop; team boards; actor lifecycles and dead letters; handoffs; delegations; subagents)
is generated in the same run with the store. The rebuild runs through the public
``projections.rebuild`` into a fresh file (then renamed into place); a second rebuild
swaps its tables into the now existing file (the copy an operator's ``clawlog rebuild``
does) and is reported beside it. Each side is the best of ``--repeat`` runs, so another
process on the machine disturbs the ratio less.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clawlog.events import open_store
from clawlog.projections import ALL_PROJECTIONS, rebuild
from clawlog.projections.testing import dump_tables, write_mixed_log_file


def raw_read(path: Path) -> float:
    """Events/s of a plain sqlite3 scan of the log with a msgpack decode of each payload."""
    conn = sqlite3.connect(path)
    started, count, position = time.perf_counter(), 0, 0
    while True:
        rows = conn.execute(
            "SELECT position, payload FROM events WHERE position > ? ORDER BY position LIMIT 5000",
            (position,),
        ).fetchall()
        if not rows:
            break
        for row in rows:
            msgspec.msgpack.decode(row[1])
        count += len(rows)
        position = rows[-1][0]
    conn.close()
    return count / (time.perf_counter() - started)


async def timed_rebuild(log: Path, views: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds of one rebuild into ``views``, and the position it reached."""
    store = await open_store(log)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        position = await rebuild(store, views, [p() for p in ALL_PROJECTIONS], show_progress=False)
        return time.perf_counter() - started, time.process_time() - cpu, position
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="30k events instead of 200k")
    parser.add_argument("--events", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    args = parser.parse_args()
    total = args.events or (30_000 if args.quick else 200_000)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.db"
        started = time.perf_counter()
        head = asyncio.run(write_mixed_log_file(log, total))
        generated = time.perf_counter() - started
        raw = max(raw_read(log) for _ in range(args.repeat))
        fresh = [
            asyncio.run(timed_rebuild(log, Path(tmp) / f"fresh{n}.views.db"))
            for n in range(args.repeat)
        ]
        wall, cpu, position = min(fresh)
        views = Path(tmp) / "fresh0.views.db"
        rows = sum(len(r) for r in dump_tables(views).values())
        swap_wall, _, _ = asyncio.run(timed_rebuild(log, views))
    assert position == head, (position, head)
    rate = head / wall
    print(f"mixed log: {head:,} events, generated in {generated:.1f} s")
    print(f"raw read + msgpack decode (best of {args.repeat}): {raw:,.0f} events/s")
    print(
        f"rebuild of {len(ALL_PROJECTIONS)} read models into a fresh file (best of "
        f"{args.repeat}): {wall:.2f} s ({cpu:.2f} s CPU), {rate:,.0f} events/s, {rows:,} rows"
    )
    print(
        f"rebuild swapped into the existing file: {swap_wall:.2f} s, "
        f"{head / swap_wall:,.0f} events/s"
    )
    print(f"RATIOS rebuild_events_per_s={rate:.0f} rebuild_vs_raw={rate / raw:.2f}")


if __name__ == "__main__":
    main()
