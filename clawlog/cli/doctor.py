"""``clawlog doctor``: examine a log and report every problem it holds.

The examination itself is :func:`clawlog.events.doctor.examine` (an application can run
it too); this module prints its report. For people: one line per problem on stdout, then
a summary line; with ``--json``: one document. Exit status 0 if the log is healthy, 1 if
damage was found (the examination ran to the end; stderr gets the summary in one line),
2 if the log cannot be examined at all (not a clawlog log, unreadable, unreachable: one
line on stderr, as every command reports a problem with the log).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

from clawlog.events import EventStore, EventStoreError, StoreDamaged
from clawlog.events.doctor import DoctorReport, examine

from .errors import CliError
from .logfile import _redacted, describe, open_log
from .render import emit_json

__all__ = ["doctor"]


async def doctor(location: str, *, as_json: bool, store: EventStore | None = None) -> int:
    """Examine the log at ``location`` and print the report; the exit status.

    ``store``: the log already opened by :func:`.logfile.open_log`, to decode through;
    None to open what is needed here, which also examines an SQLite log the store refuses
    to open (a missing table, a truncated file: damage found, exit status 1)."""
    where = _redacted(location)
    if store is None and location.startswith(("postgresql://", "postgres://")):
        async with open_log(location) as opened:  # every refusal of the server in one line
            report = await _examine(location, where, opened)
    else:
        if store is None:
            _check_file(Path(location))
        report = await _examine(location, where, store)
    if as_json:
        emit_json(report.to_json())
    else:
        for problem in report.problems():
            sys.stdout.write(f"{where}: {problem}\n")
        sys.stdout.write(f"{report.summary()}\n")
    if report.healthy:
        return 0
    sys.stderr.write(f"clawlog doctor: {report.summary()}\n")
    return 1


async def _examine(location: str, where: str, store: EventStore | None) -> DoctorReport:
    try:
        with _quiet_skips():
            report = await examine(location, store=store)
    except StoreDamaged as exc:  # too damaged to examine: its message would say "run doctor"
        at = f" at position {exc.position}" if exc.position is not None else ""
        raise CliError(f"{where} is damaged{at} beyond examining: {exc.reason}") from exc
    except (EventStoreError, OSError) as exc:  # not a log, unreadable, unreachable
        raise CliError(describe(where, exc)) from exc
    report.log = where
    return report


def _check_file(path: Path) -> None:
    if not path.exists():
        raise CliError(f"{path}: no such file (run `clawlog demo` to create one)")
    if path.is_dir():
        raise CliError(f"{path} is a directory, not a clawlog log file")


@contextlib.contextmanager
def _quiet_skips() -> Iterator[None]:
    """Without the walk's warning per skipped row: the report lists each one itself, and
    stderr keeps one line."""
    pages = logging.getLogger("clawlog.events.pages")
    drop_warnings = _DropWarnings()
    pages.addFilter(drop_warnings)
    try:
        yield
    finally:
        pages.removeFilter(drop_warnings)


class _DropWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno != logging.WARNING
