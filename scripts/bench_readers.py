"""Readers on a million events (issue 26): peak memory and wall time of every reader
command on a large SQLite log, beside the physical limit (a bare sqlite3 scan of the same
rows), in one run.

    python3 scripts/bench_readers.py [--events N] [--log PATH] [--fresh] [--before TREE]
        default: 1,000,000 events in /tmp/clawlog-bench-readers-1000000.db (made once,
        about a minute, then reused); --events 100000 for a quick look

Each command runs in a fresh interpreter (``python -m clawlog ...``) with stdout to
/dev/null, as an operator's ``clawlog audit > audit.txt`` would; its peak resident memory
comes from the kernel (``wait4``'s ``ru_maxrss``), not from sampling. The read models are
removed first, so the first ``audit`` pays the catch-up of the tool-audit model over the
whole log (``audit_catchup_s``); every later reader finds its model up to date except for
its own first catch-up, which is measured in a cold run and reported apart. The physical
limits: ``python -c pass`` (an interpreter's own memory) and a plain sqlite3 scan of every
row of the events table (no decoding, no output).

``--before TREE`` runs the same commands with an older checkout first on ``PYTHONPATH``
(``git worktree add /tmp/old <commit>``), for a before/after table; on a 1M-event log the
old readers take minutes.

Goals (issue 26): every reader <= 100 MiB, ``audit --refused`` <= 1 s, full ``audit`` <=
15 s to /dev/null. Ends with ``RATIOS tail_all_mib=... audit_all_s=... audit_refused_s=...``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clawlog.projections import views_path_for  # noqa: E402
from clawlog.projections.testing import write_mixed_log_file  # noqa: E402

#: (name, arguments after ``clawlog``): every reader, on what the mixed log holds.
READERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tail_all", ("tail", "-n", "0")),
    ("tail_50", ("tail",)),
    ("tail_json_all", ("tail", "-n", "0", "--json")),
    ("replay_all", ("replay",)),
    ("replay_tools", ("replay", "--type", "tool.*")),
    ("history", ("history", "agent0", "user0")),
    ("audit_all", ("audit",)),
    ("audit_refused", ("audit", "--refused")),
    ("audit_exec_json", ("audit", "--tool", "exec", "--json")),
    ("board", ("board", "team1")),
    ("routes", ("routes",)),
    ("delegations", ("delegations",)),
    ("mcp", ("mcp",)),
)
#: Commands whose first run catches a read model up: run once cold, then measured warm.
CATCH_UP = {"history", "board", "routes", "delegations", "mcp", "audit_all"}
GOAL_MIB = 100.0


@dataclass(frozen=True)
class Run:
    wall_s: float
    peak_mib: float


def run(argv: list[str], *, env: dict[str, str] | None = None) -> Run:
    """Wall time and peak RSS of one fresh process; raises if it failed."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=env
    )
    assert process.stderr is not None
    with process.stderr:
        errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {process.returncode}: {errors.decode()}")
    return Run(wall, usage.ru_maxrss / 1024)  # Linux: KiB


def ensure_log(path: Path, events: int, *, fresh: bool) -> int:
    if fresh:
        for old in (path, views_path_for(path)):
            old.unlink(missing_ok=True)
    if path.exists():
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            head = int(conn.execute("SELECT max(position) FROM events").fetchone()[0] or 0)
        if head >= events:
            print(f"reusing {path} ({head:,} events)")
            return head
        path.unlink()
    started = time.perf_counter()
    head = asyncio.run(write_mixed_log_file(path, events))
    took = time.perf_counter() - started
    size_mib = path.stat().st_size / 2**20
    print(f"wrote {head:,} events to {path} in {took:.1f} s ({size_mib:.0f} MiB)")
    return head


def raw_scan(path: Path) -> Run:
    """A plain sqlite3 scan of every row (the physical limit of reading the log)."""
    script = (
        "import sqlite3,sys\n"
        "c=sqlite3.connect(sys.argv[1])\n"
        "n=0\n"
        "for row in c.execute('SELECT * FROM events ORDER BY position'): n+=1\n"
    )
    return run([sys.executable, "-c", script, str(path)])


def measure(
    log: Path, tree: Path | None, console: Console
) -> tuple[dict[str, Run], dict[str, Run]]:
    """Every reader once cold (read models removed first) and once warm."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    views = views_path_for(log)
    for stale in (views, Path(f"{views}-wal"), Path(f"{views}-shm")):
        stale.unlink(missing_ok=True)
    clawlog = [sys.executable, "-m", "clawlog", "--db", str(log)]
    cold: dict[str, Run] = {}
    warm: dict[str, Run] = {}
    for name, arguments in READERS:
        if name in CATCH_UP:
            cold[name] = run([*clawlog, *arguments], env=env)
        warm[name] = run([*clawlog, *arguments], env=env)
        console.print(
            f"  {name}: {warm[name].wall_s:.2f} s, {warm[name].peak_mib:.0f} MiB"
            + (f" (cold {cold[name].wall_s:.2f} s)" if name in cold else ""),
            highlight=False,
        )
    return cold, warm


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--log", type=Path, help="the log file (default under /tmp)")
    parser.add_argument("--fresh", action="store_true", help="write the log again")
    parser.add_argument("--before", type=Path, metavar="TREE", help="an older checkout to compare")
    args = parser.parse_args()
    log = args.log or Path(f"/tmp/clawlog-bench-readers-{args.events}.db")
    head = ensure_log(log, args.events, fresh=args.fresh)
    console = Console()
    python = run([sys.executable, "-c", "pass"])
    raw = raw_scan(log)
    console.print(f"python -c pass: {python.peak_mib:.0f} MiB; raw scan {raw.wall_s:.2f} s")
    before: dict[str, Run] = {}
    if args.before is not None:
        console.print(f"before ({args.before}):")
        before = measure(log, args.before.resolve(), console)[1]
    console.print("now:")
    cold, warm = measure(log, None, console)

    table = Table(title=f"readers on {head:,} events, stdout to /dev/null (fresh processes)")
    columns = ["command", "wall s", "peak MiB", "cold s (catch-up)"]
    if before:
        columns += ["before s", "before MiB"]
    for column in columns:
        table.add_column(column, justify="left" if column == "command" else "right")
    table.add_row("python -c pass", "", f"{python.peak_mib:.0f}", "")
    table.add_row("sqlite3 scan of every row", f"{raw.wall_s:.2f}", f"{raw.peak_mib:.0f}", "")
    for name, arguments in READERS:
        row = [
            "clawlog " + " ".join(arguments),
            f"{warm[name].wall_s:.2f}",
            f"{warm[name].peak_mib:.0f}",
            f"{cold[name].wall_s:.2f}" if name in cold else "",
        ]
        if before:
            row += [f"{before[name].wall_s:.2f}", f"{before[name].peak_mib:.0f}"]
        table.add_row(*row)
    console.print(table)
    peak = max(max(r.peak_mib for r in warm.values()), max(r.peak_mib for r in cold.values()))
    over = [n for n, r in warm.items() if r.peak_mib > GOAL_MIB]
    memory = "met" if not over else "NOT met: " + ", ".join(over)
    console.print(
        f"goals: every reader <= {GOAL_MIB:.0f} MiB: {memory}; "
        f"audit --refused <= 1 s: {'met' if warm['audit_refused'].wall_s <= 1 else 'NOT met'}; "
        f"audit <= 15 s: {'met' if warm['audit_all'].wall_s <= 15 else 'NOT met'}",
        highlight=False,
    )
    print(
        f"RATIOS tail_all_mib={warm['tail_all'].peak_mib:.1f} "
        f"audit_all_s={warm['audit_all'].wall_s:.2f} "
        f"audit_refused_s={warm['audit_refused'].wall_s:.2f} "
        f"max_reader_mib={peak:.1f} "
        f"tail_all_s={warm['tail_all'].wall_s:.2f} "
        f"tail_all_vs_raw_scan={warm['tail_all'].wall_s / raw.wall_s:.2f} "
        f"audit_catchup_s={cold['audit_all'].wall_s:.2f}"
    )


if __name__ == "__main__":
    main()
