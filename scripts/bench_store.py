"""Event store benchmark, side by side in one run (issue 2; PostgreSQL section: issue 11).

    python3 scripts/bench_store.py [--quick] [--pg URL]

1. the physical limit: stdlib sqlite3 appending the same rows (same schema shape),
   one transaction for all, and group commits of 100 rows, WAL, synchronous=FULL;
2. clawlog's SQLite append with 1, 10 and 100 concurrent producers over 1000 streams at
   FULL (events/s, p50 and p99 latency of one append);
3. the peer: the ``eventsourcing`` library's SQLite recorder, one event per
   ``insert_events`` and 1000 per call;
4. ``read_all`` + decode against a raw stdlib read + msgspec decode of the same rows.

Prints a table and ends with ``RATIOS key=value ...``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from events import ANY, Event, EventRegistry, open_store
from events.backends.sqlite import SqliteBackend

STREAMS = 1000


class Measured(Event, tag="bench.measured"):
    sensor: str
    value: float
    note: str = "steady"


def payloads(n: int) -> list[bytes]:
    encoder = msgspec.msgpack.Encoder()
    return [encoder.encode(Measured(sensor=f"s{i % 97}", value=i * 0.5)) for i in range(n)]


# -- 1. the physical limit ------------------------------------------------------------
def raw_sqlite(path: Path, n: int, batch: int | None) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(
        "CREATE TABLE events (position INTEGER PRIMARY KEY, stream TEXT NOT NULL, version "
        "INTEGER NOT NULL, type TEXT NOT NULL, schema_version INTEGER NOT NULL, payload BLOB "
        "NOT NULL, recorded_at REAL NOT NULL, UNIQUE (stream, version))"
    )
    data = payloads(n)
    rows = [(i + 1, f"stream-{i % STREAMS}", i // STREAMS + 1, "bench.measured", 1, data[i],
             time.time()) for i in range(n)]
    size = batch or n
    started = time.perf_counter()
    for start in range(0, n, size):
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?)", rows[start:start + size])
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return n / elapsed


# -- 2. clawlog -----------------------------------------------------------------------
async def clawlog_append(path: Path, n: int, producers: int) -> tuple[float, float, float]:
    registry = EventRegistry([Measured])
    store = await open_store(SqliteBackend(path), registry=registry)
    latencies: list[float] = []
    per_producer = n // producers

    async def producer(k: int) -> None:
        for i in range(per_producer):
            stream = f"stream-{(k * per_producer + i) % STREAMS}"
            event = Measured(sensor=f"s{i % 97}", value=i * 0.5)
            started = time.perf_counter()
            await store.append(stream, [event], expected_version=ANY)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(producer(k) for k in range(producers)))
    elapsed = time.perf_counter() - started
    await store.close()
    latencies.sort()
    p50 = statistics.median(latencies) * 1e6
    p99 = latencies[int(len(latencies) * 0.99) - 1] * 1e6
    return per_producer * producers / elapsed, p50, p99


# -- 3. the peer ----------------------------------------------------------------------
def eventsourcing_sqlite(path: Path, n: int, per_save: int) -> float:
    from eventsourcing.persistence import StoredEvent
    from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

    datastore = SQLiteDatastore(str(path))
    recorder = SQLiteApplicationRecorder(datastore)
    recorder.create_table()
    data = payloads(n)
    ids = [uuid.uuid4() for _ in range(STREAMS)]
    events = [StoredEvent(originator_id=ids[i % STREAMS], originator_version=i // STREAMS + 1,
                          topic="bench:Measured", state=data[i]) for i in range(n)]
    started = time.perf_counter()
    for start in range(0, n, per_save):
        recorder.insert_events(events[start:start + per_save])
    elapsed = time.perf_counter() - started
    datastore.close()
    return n / elapsed


# -- 4. reading -----------------------------------------------------------------------
async def read_both(path: Path) -> tuple[float, float, int]:
    decoder = msgspec.msgpack.Decoder(Measured)
    conn = sqlite3.connect(path)
    started = time.perf_counter()
    count = 0
    position = 0
    while True:
        rows = conn.execute(
            "SELECT position, stream, version, type, schema_version, payload, recorded_at "
            "FROM events WHERE position > ? ORDER BY position LIMIT 5000", (position,)
        ).fetchall()
        if not rows:
            break
        for row in rows:
            decoder.decode(row[5])
        count += len(rows)
        position = rows[-1][0]
    raw = count / (time.perf_counter() - started)
    conn.close()
    store = await open_store(SqliteBackend(path, read_only=True),
                             registry=EventRegistry([Measured]))
    started = time.perf_counter()
    seen = 0
    position = 1
    while True:
        page = await store.read_all(position, 5000)
        if not page:
            break
        seen += len(page)
        position = page[-1].position + 1
    ours = seen / (time.perf_counter() - started)
    await store.close()
    return ours, raw, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller counts (< 60 s)")
    parser.add_argument("--pg", default=os.environ.get("CLAWLOG_BENCH_DATABASE_URL"),
                        help="also run the PostgreSQL section against this URL")
    args = parser.parse_args()
    n = 20_000 if args.quick else 100_000
    single = 2_000 if args.quick else 5_000
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parents[1]) as tmp:
        root = Path(tmp)
        results["raw_one_tx"] = raw_sqlite(root / "raw1.db", n, None)
        results["raw_group100"] = raw_sqlite(root / "raw100.db", n, 100)
        results["es_single"] = eventsourcing_sqlite(root / "es1.db", single, 1)
        results["es_batch"] = eventsourcing_sqlite(root / "es1000.db", n, 1000)
        for producers, count in ((1, single), (10, n // 2), (100, n)):
            rate, p50, p99 = asyncio.run(
                clawlog_append(root / f"claw{producers}.db", count, producers))
            results[f"claw{producers}"] = (rate, p50, p99)
        ours, raw, seen = asyncio.run(read_both(root / "claw100.db"))
        results["read"] = (ours, raw, seen)
        pg: dict[str, float] = {}
        if args.pg:
            from bench_store_pg import run_pg_section  # type: ignore[import-not-found]

            pg = asyncio.run(run_pg_section(args.pg, args.quick))
    report(results, pg, n)


def report(r: dict[str, Any], pg: dict[str, float], n: int) -> None:
    table = Table(title=f"event store appends and reads ({n:,} events, {STREAMS} streams, "
                        "SQLite WAL synchronous=FULL)")
    for column in ("what", "events/s", "p50 µs", "p99 µs"):
        table.add_column(column, justify="left" if column == "what" else "right")
    table.add_row("raw sqlite3, one transaction for all", f"{r['raw_one_tx']:,.0f}", "", "")
    table.add_row("raw sqlite3, group commit of 100", f"{r['raw_group100']:,.0f}", "", "")
    for producers in (1, 10, 100):
        rate, p50, p99 = r[f"claw{producers}"]
        table.add_row(f"clawlog append, {producers} producer(s)", f"{rate:,.0f}", f"{p50:,.0f}",
                      f"{p99:,.0f}")
    table.add_row("eventsourcing SQLite, 1 event per save", f"{r['es_single']:,.0f}", "", "")
    table.add_row("eventsourcing SQLite, 1000 per save", f"{r['es_batch']:,.0f}", "", "")
    ours, raw, seen = r["read"]
    table.add_row(f"clawlog read_all + decode ({seen:,})", f"{ours:,.0f}", "", "")
    table.add_row("raw read + msgspec decode", f"{raw:,.0f}", "", "")
    for key, value in pg.items():
        table.add_row(f"postgres: {key}", f"{value:,.2f}", "", "")
    Console().print(table)
    ratios = {
        "append100_vs_raw_group": r["claw100"][0] / r["raw_group100"],
        "append100_vs_eventsourcing_batch": r["claw100"][0] / r["es_batch"],
        "append1_vs_eventsourcing_single": r["claw1"][0] / r["es_single"],
        "append1_p50_us": r["claw1"][1],
        "readall_vs_raw": ours / raw,
    }
    if "pg_append100_vs_eventsourcing" in pg:
        ratios["pg_append100_vs_eventsourcing"] = pg["pg_append100_vs_eventsourcing"]
    print("RATIOS " + " ".join(f"{k}={v:.2f}" for k, v in ratios.items()))


if __name__ == "__main__":
    main()
