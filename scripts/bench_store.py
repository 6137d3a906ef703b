"""Event store benchmark, side by side in one run (issue 2; PostgreSQL section: issue 11).

    python3 scripts/bench_store.py [--quick] [--pg URL] [--baseline DIR]
    python3 scripts/bench_store.py --chain [--rounds N] [--baseline DIR]

1. the physical limit: stdlib sqlite3 appending the same rows (same schema shape:
   position PK, stream, version, type, payload, UNIQUE (stream, version)) in one
   transaction for all, in group commits of 100 rows, and one row per commit; WAL,
   synchronous=FULL;
2. clawlog's SQLite append (``open_store(path)``) with 1, 10 and 100 concurrent producers
   over 1000 streams at FULL: events/s, p50 and p99 latency of one append;
3. the peer: the ``eventsourcing`` library's SQLite recorder (WAL, SQLite's default FULL),
   one event per ``insert_events`` and 1000 per call;
4. ``read_all`` + decode against a raw stdlib read + msgspec decode of the same rows;
5. the cost of the hash chain (issue 20): the 100-producer append again with a writer
   that neither hashes nor records the chain's head (``append100_hashed_vs_unhashed``),
   with the process CPU per event of both. ``--baseline DIR`` adds the 100-producer
   append of another checkout (``git archive REV | tar -x -C DIR``), run in a child
   process that imports DIR's clawlog, in the same rounds: an old chain against the new
   one side by side (``append100_hashed_vs_baseline``). ``--chain`` runs only these
   contenders, ``--rounds`` times (default 7; the order rotates each round).

Every contender writes the same rows (the same payload bytes, streams and versions) into
its own fresh file in one temporary directory (under the system's, as /tmp). The full run
repeats each measurement three times, round-robin (the hashed and unhashed 100-producer
appends swap places every other round), and reports the median. ``--pg URL``
(or CLAWLOG_BENCH_DATABASE_URL) adds the PostgreSQL section from ``bench_store_pg.py``.
Prints a table and ends with ``RATIOS key=value ...``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clawlog.events import ANY, Event, EventRegistry, open_store
from clawlog.events.backends.sqlite import SqliteBackend
from clawlog.events.backends.sqlite_writer import BatchWriter

STREAMS = 1000
READ_PAGE = 5000


class Measured(Event, tag="bench.measured"):
    sensor: str
    value: float
    note: str = "steady"


def event(i: int) -> Measured:
    """The ``i``-th event of every contender: row ``i`` goes to stream ``i % STREAMS``."""
    return Measured(sensor=f"s{i % 97}", value=i * 0.5)


def payloads(n: int) -> list[bytes]:
    encoder = msgspec.msgpack.Encoder()
    return [encoder.encode(event(i)) for i in range(n)]


class Rate(msgspec.Struct):
    """One measurement: events per second, and per-append latency where it applies."""

    per_s: float
    p50_us: float | None = None
    p99_us: float | None = None
    #: Process CPU (every thread) per event, µs.
    cpu_us: float | None = None


# -- 1. the physical limit ------------------------------------------------------------
def raw_sqlite(path: Path, n: int, batch: int | None) -> Rate:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(
        "CREATE TABLE events (position INTEGER PRIMARY KEY, stream TEXT NOT NULL, version "
        "INTEGER NOT NULL, type TEXT NOT NULL, schema_version INTEGER NOT NULL, payload BLOB "
        "NOT NULL, recorded_at REAL NOT NULL, UNIQUE (stream, version))"
    )
    data = payloads(n)
    now = time.time()
    rows = [
        (i + 1, f"stream-{i % STREAMS}", i // STREAMS + 1, "bench.measured", 1, data[i], now)
        for i in range(n)
    ]
    size = batch or n
    started = time.perf_counter()
    for start in range(0, n, size):
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?)", rows[start : start + size])
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return Rate(n / elapsed)


# -- 2. clawlog -----------------------------------------------------------------------
class UnchainedSqliteBackend(SqliteBackend):
    """The SQLite backend with a writer that keeps no hash chain: only to time the
    chain's cost (clawlog itself always keeps it)."""

    def _batch_writer(self) -> BatchWriter:
        return BatchWriter(self._max_batch, chained=False)


async def clawlog_append(path: Path, n: int, producers: int, *, chained: bool = True) -> Rate:
    backend = SqliteBackend(path) if chained else UnchainedSqliteBackend(path)
    store = await open_store(backend, registry=EventRegistry([Measured]))
    per_producer = n // producers
    latencies: list[float] = []

    async def producer(k: int) -> None:
        for g in range(k * per_producer, (k + 1) * per_producer):
            started = time.perf_counter()
            await store.append(f"stream-{g % STREAMS}", [event(g)], expected_version=ANY)
            latencies.append(time.perf_counter() - started)

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(producer(k) for k in range(producers)))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    await store.close()
    latencies.sort()
    return Rate(
        len(latencies) / elapsed,
        latencies[len(latencies) // 2] * 1e6,
        latencies[int(len(latencies) * 0.99) - 1] * 1e6,
        cpu / len(latencies) * 1e6,
    )


#: Run in a child process: another checkout's 100-producer append (``--baseline``).
_BASELINE = """
import asyncio, json, pathlib, sys, time
sys.path[:0] = [{tree!r}, {tree!r} + "/scripts"]
import bench_store
cpu = time.process_time()
rate = asyncio.run(bench_store.clawlog_append(pathlib.Path({path!r}), {n}, 100))
cpu = (time.process_time() - cpu) / {n} * 1e6  # with the store's open and close
print(json.dumps({{"per_s": rate.per_s, "p50_us": rate.p50_us, "p99_us": rate.p99_us,
                  "cpu_us": getattr(rate, "cpu_us", None) or cpu}}))
"""


def baseline_append(tree: Path, path: Path, n: int) -> Rate:
    """The 100-producer append of the checkout at ``tree`` (its own clawlog and writer),
    in a child process started outside the repository so that it imports that tree."""
    code = _BASELINE.format(tree=str(tree.resolve()), path=str(path), n=n)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=path.parent, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"the baseline at {tree} failed:\n{done.stderr}")
    return Rate(**json.loads(done.stdout.splitlines()[-1]))


# -- 3. the peer ----------------------------------------------------------------------
def eventsourcing_sqlite(path: Path, n: int, per_save: int) -> Rate:
    from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

    datastore = SQLiteDatastore(str(path))
    recorder = SQLiteApplicationRecorder(datastore)
    recorder.create_table()
    per_s = eventsourcing_insert(recorder, n, per_save)
    datastore.close()
    return Rate(per_s)


def eventsourcing_insert(recorder: Any, n: int, per_save: int) -> float:
    """Events/s of ``recorder.insert_events`` writing the same rows as every contender,
    ``per_save`` a call (shared with the PostgreSQL section)."""
    from eventsourcing.persistence import StoredEvent

    data = payloads(n)
    ids = [uuid.uuid4() for _ in range(STREAMS)]
    events = [
        StoredEvent(
            originator_id=ids[i % STREAMS],
            originator_version=i // STREAMS + 1,
            topic="bench:Measured",
            state=data[i],
        )
        for i in range(n)
    ]
    started = time.perf_counter()
    for start in range(0, n, per_save):
        recorder.insert_events(events[start : start + per_save])
    return n / (time.perf_counter() - started)


# -- 4. reading -----------------------------------------------------------------------
def raw_read(path: Path) -> Rate:
    decoder = msgspec.msgpack.Decoder(Measured)
    conn = sqlite3.connect(path)
    started = time.perf_counter()
    count = position = 0
    while rows := conn.execute(
        "SELECT position, stream, version, type, schema_version, payload, recorded_at "
        "FROM events WHERE position > ? ORDER BY position LIMIT ?",
        (position, READ_PAGE),
    ).fetchall():
        for row in rows:
            decoder.decode(row[5])
        count += len(rows)
        position = rows[-1][0]
    elapsed = time.perf_counter() - started
    conn.close()
    return Rate(count / elapsed)


async def clawlog_read(path: Path) -> Rate:
    store = await open_store(
        SqliteBackend(path, read_only=True), registry=EventRegistry([Measured])
    )
    started = time.perf_counter()
    count, position = 0, 1
    while page := await store.read_all(position, READ_PAGE):
        count += len(page)
        position = page[-1].position + 1
    elapsed = time.perf_counter() - started
    await store.close()
    return Rate(count / elapsed)


# -- the run --------------------------------------------------------------------------
def chain_measurements(n: int, baseline: Path | None) -> dict[str, Callable[[Path], Rate]]:
    """The hash chain's contenders: clawlog's 100-producer append with and without the
    chain, and a baseline checkout's (if given)."""
    found: dict[str, Callable[[Path], Rate]] = {
        "claw100": lambda d: asyncio.run(clawlog_append(d / "claw.db", n, 100)),
        "claw100_unhashed": lambda d: asyncio.run(
            clawlog_append(d / "claw.db", n, 100, chained=False)
        ),
    }
    if baseline is not None:
        found["claw100_baseline"] = lambda d: baseline_append(baseline, d / "claw.db", n)
    return found


def measurements(
    n: int, single: int, baseline: Path | None = None
) -> dict[str, Callable[[Path], Rate]]:
    """Each contender, as a function of a fresh directory (the read pair of the file
    that the 100-producer run wrote, kept in the run's root)."""
    chain = chain_measurements(n, baseline)
    return {
        "raw_one_tx": lambda d: raw_sqlite(d / "raw.db", n, None),
        "raw_group100": lambda d: raw_sqlite(d / "raw.db", n, 100),
        "raw_single": lambda d: raw_sqlite(d / "raw.db", single, 1),
        "claw1": lambda d: asyncio.run(clawlog_append(d / "claw.db", single, 1)),
        "claw10": lambda d: asyncio.run(clawlog_append(d / "claw.db", n // 2, 10)),
        **chain,
        "es_single": lambda d: eventsourcing_sqlite(d / "es.db", single, 1),
        "es_batch": lambda d: eventsourcing_sqlite(d / "es.db", n, 1000),
    }


def run(n: int, single: int, rounds: int, baseline: Path | None) -> dict[str, Rate]:
    samples: dict[str, list[Rate]] = {}
    with tempfile.TemporaryDirectory(prefix="clawlog-bench-store-") as tmp:
        root = Path(tmp)
        for round_ in range(rounds):
            contenders = list(measurements(n, single, baseline).items())
            if round_ % 2:  # the chain's pair in the other order every other round
                names = [name for name, _ in contenders]
                i, j = names.index("claw100"), names.index("claw100_unhashed")
                contenders[i], contenders[j] = contenders[j], contenders[i]
            for name, measure in contenders:
                directory = root / f"{name}-{round_}"
                directory.mkdir()
                rate = measure(directory)
                samples.setdefault(name, []).append(rate)
                _progress(round_, name, rate)
        log = root / "claw100-0" / "claw.db"
        raw_read(log)  # warm the page cache for both readers
        for _ in range(rounds):
            samples.setdefault("read_raw", []).append(raw_read(log))
            samples.setdefault("read_claw", []).append(asyncio.run(clawlog_read(log)))
    return {name: median(rates) for name, rates in samples.items()}


def run_chain(n: int, rounds: int, baseline: Path | None) -> dict[str, list[Rate]]:
    """Only the chain's contenders, every sample, the order rotating each round (a slow
    spell of a shared machine then falls on each in turn)."""
    samples: dict[str, list[Rate]] = {}
    contenders = list(chain_measurements(n, baseline).items())
    with tempfile.TemporaryDirectory(prefix="clawlog-bench-chain-") as tmp:
        for round_ in range(rounds):
            shift = round_ % len(contenders)
            for name, measure in contenders[shift:] + contenders[:shift]:
                directory = Path(tmp) / f"{name}-{round_}"
                directory.mkdir()
                rate = measure(directory)
                samples.setdefault(name, []).append(rate)
                _progress(round_, name, rate)
    return samples


def _progress(round_: int, name: str, rate: Rate) -> None:
    """One line per measurement on stderr, with the machine's load: a shared machine's
    slow spells show."""
    cpu = "" if rate.cpu_us is None else f" {rate.cpu_us:.2f} µs CPU/event"
    load = os.getloadavg()[0]
    print(f"round {round_ + 1}: {name} {rate.per_s:,.0f}/s{cpu} (load {load:.1f})", file=sys.stderr)


def median(rates: list[Rate]) -> Rate:
    return sorted(rates, key=lambda r: r.per_s)[len(rates) // 2]


def median_cpu(rates: list[Rate]) -> Rate:
    """The sample with the median CPU per event (the throughput median's may differ)."""
    return sorted(rates, key=lambda r: r.cpu_us or 0.0)[len(rates) // 2]


def chain_ratios(r: dict[str, Rate]) -> dict[str, float]:
    """The hash chain's RATIOS: events/s hashed ÷ unhashed (and ÷ the baseline's), and
    the process CPU per event they cost (µs)."""
    hashed, unhashed = r["claw100"], r["claw100_unhashed"]
    ratios = {"append100_hashed_vs_unhashed": hashed.per_s / unhashed.per_s}
    if hashed.cpu_us is not None and unhashed.cpu_us is not None:
        ratios["chain_cpu_us_per_event"] = hashed.cpu_us - unhashed.cpu_us
    if "claw100_baseline" in r:
        ratios["append100_hashed_vs_baseline"] = hashed.per_s / r["claw100_baseline"].per_s
    return ratios


def report(r: dict[str, Rate], pg: dict[str, float], n: int, single: int, rounds: int) -> None:
    table = Table(
        title=f"event store appends and reads: {n:,} events ({single:,} one at a time) over "
        f"{STREAMS} streams, SQLite WAL synchronous=FULL, median of {rounds}"
    )
    for column in ("what", "events/s", "p50 µs", "p99 µs"):
        table.add_column(column, justify="left" if column == "what" else "right")

    def row(label: str, rate: Rate) -> None:
        cells = [f"{rate.per_s:,.0f}"] + [
            "" if v is None else f"{v:,.0f}" for v in (rate.p50_us, rate.p99_us)
        ]
        table.add_row(label, *cells)

    row("raw sqlite3, one transaction for all", r["raw_one_tx"])
    row("raw sqlite3, group commit of 100", r["raw_group100"])
    row("raw sqlite3, one row per commit", r["raw_single"])
    for producers in (1, 10, 100):
        row(f"clawlog append, {producers} producer{'s' * (producers > 1)}", r[f"claw{producers}"])
    row("clawlog append, 100 producers, no hash chain", r["claw100_unhashed"])
    if "claw100_baseline" in r:
        row("baseline checkout's append, 100 producers", r["claw100_baseline"])
    row("eventsourcing SQLite, 1 event per save", r["es_single"])
    row("eventsourcing SQLite, 1000 per save", r["es_batch"])
    row("clawlog read_all + decode", r["read_claw"])
    row("raw read + msgspec decode", r["read_raw"])
    for key, value in pg.items():
        if key != "pg_append100_vs_eventsourcing":
            table.add_row(f"PostgreSQL: {key}", f"{value:,.0f}", "", "")
    Console().print(table)
    ratios = {
        "append100_vs_raw_group": r["claw100"].per_s / r["raw_group100"].per_s,
        "append100_vs_eventsourcing_batch": r["claw100"].per_s / r["es_batch"].per_s,
        "append1_vs_eventsourcing_single": r["claw1"].per_s / r["es_single"].per_s,
        "append1_vs_raw_single": r["claw1"].per_s / r["raw_single"].per_s,
        "append1_p50_us": r["claw1"].p50_us,
        "readall_vs_raw": r["read_claw"].per_s / r["read_raw"].per_s,
        **chain_ratios(r),
    }
    if "pg_append100_vs_eventsourcing" in pg:
        ratios["pg_append100_vs_eventsourcing"] = pg["pg_append100_vs_eventsourcing"]
    print("RATIOS " + " ".join(f"{k}={v:.2f}" for k, v in ratios.items()))


def report_chain(samples: dict[str, list[Rate]], n: int) -> None:
    """Medians of events/s and of CPU per event, and the ratios of medians; the paired
    ratio (the median of each round's hashed ÷ unhashed) is steadier on a shared disk."""
    rounds = len(samples["claw100"])
    table = Table(title=f"the hash chain's cost: {n:,} events, 100 producers, median of {rounds}")
    for column in ("what", "events/s", "p50 µs", "p99 µs", "CPU µs/event"):
        table.add_column(column, justify="left" if column == "what" else "right")
    labels = {
        "claw100": "clawlog append (hash chain)",
        "claw100_unhashed": "clawlog append, no hash chain",
        "claw100_baseline": "baseline checkout's append",
    }
    medians = {name: median(rates) for name, rates in samples.items()}
    cpu = {name: median_cpu(rates) for name, rates in samples.items()}
    for name, label in labels.items():
        if name in samples:
            rate, used = medians[name], cpu[name].cpu_us
            cells = [f"{rate.per_s:,.0f}", f"{rate.p50_us or 0:,.0f}", f"{rate.p99_us or 0:,.0f}"]
            table.add_row(label, *cells, "" if used is None else f"{used:.2f}")
    Console().print(table)
    ratios = chain_ratios(medians)
    ratios["chain_cpu_us_per_event"] = chain_ratios(cpu).get("chain_cpu_us_per_event", 0.0)
    pairs = zip(samples["claw100"], samples["claw100_unhashed"], strict=True)
    paired = sorted(hashed.per_s / unhashed.per_s for hashed, unhashed in pairs)
    ratios["append100_hashed_vs_unhashed_paired"] = paired[len(paired) // 2]
    print("RATIOS " + " ".join(f"{k}={v:.2f}" for k, v in ratios.items()))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller counts, one round (< 60 s)")
    parser.add_argument(
        "--chain", action="store_true", help="only the hash chain's contenders (section 5)"
    )
    parser.add_argument("--rounds", type=int, help="rounds of --chain (default 7; --quick 3)")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="another checkout whose 100-producer append runs beside this one's",
    )
    parser.add_argument(
        "--pg",
        default=os.environ.get("CLAWLOG_BENCH_DATABASE_URL"),
        help="also run the PostgreSQL section against this URL",
    )
    args = parser.parse_args()
    n, single, rounds = (20_000, 2_000, 1) if args.quick else (100_000, 5_000, 3)
    if args.chain:
        report_chain(run_chain(n, args.rounds or (3 if args.quick else 7), args.baseline), n)
        return
    results = run(n, single, rounds, args.baseline)
    pg: dict[str, Any] = {}
    if args.pg:
        from bench_store_pg import run_pg_section  # type: ignore[import-not-found]

        pg = asyncio.run(run_pg_section(args.pg, args.quick))
    else:
        Console(stderr=True).print("[dim]PostgreSQL section skipped: no --pg URL[/dim]")
    report(results, pg, n, single, rounds)


if __name__ == "__main__":
    main()
