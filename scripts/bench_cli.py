"""CLI start-up benchmark (issue 16): wall time of ``clawlog --help`` and
``clawlog tail -n 1`` in fresh processes, against a bare ``python -c pass``, in one run.

    python3 scripts/bench_cli.py [--quick]
        full: median of 31 runs each; --quick: 7 (a few seconds)

Each run is a new interpreter (``python -m clawlog ...``, the same interpreter as this
script), so every import is paid again, as when a user types the command; the three
commands take turns, so a busy moment of the machine hits all three alike. One untimed
run of each first compiles the bytecode. ``tail -n 1`` reads the log of a ``clawlog demo``
run made in a temporary directory (stdout is a pipe, as in ``clawlog tail -n 1 | ...``).
The CPU time (user + system) of each run is shown beside its wall time: on a shared machine
it moves less. Goal: ``help_s`` ≤ 0.3 s. Ends with ``RATIOS help_s=... tail1_s=... ...``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]


def run_once(argv: list[str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def make_demo_log(folder: Path) -> Path:
    log = folder / "demo.db"
    subprocess.run(
        [sys.executable, "-m", "clawlog", "demo", "--db", str(log)],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    return log


def measure(commands: dict[str, list[str]], runs: int) -> dict[str, tuple[float, float]]:
    """The median wall and CPU time of each command over ``runs`` turns."""
    for argv in commands.values():
        run_once(argv)  # compiles the .pyc files; not timed
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(run_once(argv))
    return {
        name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
        for name, values in times.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="7 runs of each instead of 31")
    runs = 7 if parser.parse_args().quick else 31
    with tempfile.TemporaryDirectory() as tmp:
        log = make_demo_log(Path(tmp))
        clawlog = [sys.executable, "-m", "clawlog"]
        medians = measure(
            {
                "python -c pass": [sys.executable, "-c", "pass"],
                "clawlog --help": [*clawlog, "--help"],
                "clawlog tail -n 1": [*clawlog, "tail", "-n", "1", "--db", str(log)],
            },
            runs,
        )
    (bare, bare_cpu), (help_s, help_cpu), (tail1_s, tail1_cpu) = medians.values()
    table = Table(title=f"start-up time, median of {runs} fresh processes (seconds)")
    for column in ("command", "wall", "over python -c pass", "CPU (user + sys)"):
        table.add_column(column, justify="left" if column == "command" else "right")
    for name, (wall, cpu) in medians.items():
        table.add_row(name, f"{wall:.3f}", f"{wall - bare:+.3f}", f"{cpu:.3f}")
    Console().print(table)
    print(
        f"RATIOS help_s={help_s:.3f} tail1_s={tail1_s:.3f} python_s={bare:.3f} "
        f"help_vs_python={help_s / bare:.2f} tail1_vs_python={tail1_s / bare:.2f} "
        f"help_cpu_s={help_cpu:.3f} tail1_cpu_s={tail1_cpu:.3f} python_cpu_s={bare_cpu:.3f}"
    )


if __name__ == "__main__":
    main()
