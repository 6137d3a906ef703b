"""The readers print as they read: their memory does not grow with the log.

Each reader runs in a fresh process on two mixed logs, one five times the size of the
other (30k and 150k events); the kernel's peak resident memory of each run (``wait4``'s
``ru_maxrss``) must grow by less than ``_GROWTH_MIB`` from the small log to the large one.
A reader that collected what it prints would grow by about 1 KiB per event, about 120 MiB
here (the issue measured 950 MiB for ``tail -n 0`` on a million events). The figures on a
million events are in scripts/bench_readers.py and BENCHMARKS.md.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clawlog.projections.testing import write_mixed_log_file

_SMALL, _LARGE = 30_000, 150_000
_GROWTH_MIB = 20.0
_READERS = {
    "tail -n 0": ["tail", "-n", "0"],
    "tail -n 0 --json": ["tail", "-n", "0", "--json"],
    "replay": ["replay"],
    "replay --json": ["replay", "--json"],
    "audit": ["audit"],
    "audit --json": ["audit", "--json"],
    "history": ["history", "agent0", "user0"],
    "board": ["board", "team1"],
    "delegations": ["delegations"],
}


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("bounded-memory")
    small, large = folder / "small.db", folder / "large.db"
    asyncio.run(write_mixed_log_file(small, _SMALL))
    asyncio.run(write_mixed_log_file(large, _LARGE))
    return small, large


def _peak_mib(log: Path, arguments: list[str]) -> float:
    """The peak RSS of ``clawlog --db log ARGUMENTS > /dev/null`` in a fresh process."""
    process = subprocess.Popen(
        [sys.executable, "-m", "clawlog", "--db", str(log), *arguments],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    with process.stderr:
        errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0, errors.decode()
    return usage.ru_maxrss / 1024  # KiB on Linux


@pytest.mark.parametrize("name", list(_READERS))
def test_a_readers_memory_does_not_grow_with_the_log(logs: tuple[Path, Path], name: str) -> None:
    small, large = logs
    arguments = _READERS[name]
    _peak_mib(small, arguments)  # the read models catch up here, not in the measured runs
    _peak_mib(large, arguments)
    growth = _peak_mib(large, arguments) - _peak_mib(small, arguments)
    assert growth < _GROWTH_MIB, (
        f"clawlog {name}: {growth:.1f} MiB more for {_LARGE - _SMALL:,} more events"
    )
