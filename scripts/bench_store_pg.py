"""PostgreSQL section of the store benchmark (issue 11): clawlog with 100 concurrent
producers against the ``eventsourcing`` library's PostgreSQL recorder at the same batch
size (100 events per ``insert_events``), in one run, on the same server. Both run
``rounds`` times, alternating, each into a fresh schema (dropped afterwards); the rates
are medians and the ratio is the median of the per-round ratios (robust to a noisy host).

    python3 scripts/bench_store_pg.py --url postgresql://postgres@127.0.0.1:5432/clawlog \
        [--quick] [--rounds 3] [--lease]

``--lease`` also measures clawlog's appends each carrying a lease token (what a System on
PostgreSQL sends: every stream leased, every append fenced), in the same rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import STREAMS, Measured, event, eventsourcing_insert

from clawlog.events import ANY, EventRegistry, LeaseToken, open_store
from clawlog.events.backends.postgres import PostgresBackend


async def clawlog_pg(url: str, n: int, producers: int, leased: bool = False) -> float:
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    backend = PostgresBackend(url, schema=schema, pool_size=4)
    store = await open_store(backend, registry=EventRegistry([Measured]))
    per = n // producers
    tokens: list[LeaseToken | None] = [None] * STREAMS
    if leased:  # taken before the clock starts, as a System does when a session starts
        leases = await backend.acquire_leases(
            [f"stream-{s}" for s in range(STREAMS)], "bench", 3600
        )
        tokens = [LeaseToken("bench", leases[f"stream-{s}"].epoch) for s in range(STREAMS)]

    async def producer(k: int) -> None:
        for i in range(per):
            g = k * per + i
            s = g % STREAMS
            await store.append(f"stream-{s}", [event(g)], ANY, lease=tokens[s])

    started = time.perf_counter()
    await asyncio.gather(*(producer(k) for k in range(producers)))
    elapsed = time.perf_counter() - started
    await store.close()
    await _execute(url, f"DROP SCHEMA {schema} CASCADE")
    return per * producers / elapsed


def eventsourcing_pg(url: str, n: int, per_save: int) -> float:
    from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

    parts = urlparse(url)
    es_schema = f"es_{uuid.uuid4().hex[:8]}"
    asyncio.run(_execute(url, f"CREATE SCHEMA {es_schema}"))
    datastore = PostgresDatastore(
        dbname=parts.path.lstrip("/"),
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password or "",
        schema=es_schema,
    )
    recorder = PostgresApplicationRecorder(datastore)
    recorder.create_table()
    per_s = eventsourcing_insert(recorder, n, per_save)
    datastore.close()
    asyncio.run(_execute(url, f"DROP SCHEMA {es_schema} CASCADE"))
    return per_s


async def _execute(url: str, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    await conn.execute(sql)
    await conn.close()


async def run_pg_section(
    url: str, quick: bool, rounds: int = 3, leased: bool = False
) -> dict[str, float]:
    n = 10_000 if quick else 40_000
    ours, theirs, fenced = [], [], []
    for _ in range(rounds):
        ours.append(await clawlog_pg(url, n, 100))
        if leased:
            fenced.append(await clawlog_pg(url, n, 100, leased=True))
        theirs.append(await asyncio.to_thread(eventsourcing_pg, url, n, 100))
    extra = {}
    if leased:
        extra["clawlog append with a lease token, 100 producers (events/s)"] = statistics.median(
            fenced
        )
    return {
        "clawlog append, 100 producers (events/s)": statistics.median(ours),
        **extra,
        "eventsourcing insert_events, 100 per call (events/s)": statistics.median(theirs),
        "pg_append100_vs_eventsourcing": statistics.median(
            a / b for a, b in zip(ours, theirs, strict=True)
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lease", action="store_true", help="also append with lease tokens")
    args = parser.parse_args()
    results = asyncio.run(run_pg_section(args.url, args.quick, args.rounds, args.lease))
    for key, value in results.items():
        print(f"{key}: {value:,.2f}")
    print(f"RATIOS pg_append100_vs_eventsourcing={results['pg_append100_vs_eventsourcing']:.2f}")


if __name__ == "__main__":
    main()
