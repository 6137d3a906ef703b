"""The ``clawlog`` command: the demo, and readers over a log.

``main`` parses the command line, sends clawlog's own log records to stderr, runs the
command, and reports every user error in one line on stderr with exit status 2. An
error no layer below translated is reported the same way, never as a traceback (which
``-vv`` logs, for a bug report). Parsing
needs only argparse: the log, the read models and the runtime are imported by the
commands that use them (see ``commands.py``), so ``clawlog --help`` starts at once.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .arguments import parse_command_line
from .errors import CliError

if TYPE_CHECKING:
    import logging

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``clawlog`` with ``argv`` (default: the process's arguments); the exit status."""
    args = parse_command_line(argv)
    _log_to_stderr(verbose=args.verbose, quiet=args.quiet, restated=_restated(args))
    try:
        status = _run(args)
        sys.stdout.flush()  # here, so that a closed pipe is seen below, not at exit
    except CliError as exc:
        sys.stderr.write(f"clawlog: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`clawlog tail | head -1`): stop quietly. Python flushes
        # stdout again at exit, so point it at /dev/null (the recipe in the Python docs,
        # "Note on SIGPIPE"; exit status 1 as Python's own on EPIPE).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:  # a bug, or an error a boundary missed: still one line
        import logging

        logging.getLogger("clawlog.cli").debug("unexpected error", exc_info=exc)
        message = " ".join(str(exc).split())
        sys.stderr.write(
            f"clawlog: unexpected {type(exc).__name__}: {message} "
            "(please report it; -vv shows where it came from)\n"
        )
        return 2
    return status


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from .commands import run_command

    return asyncio.run(run_command(args))


_HANDLER_NAME = "clawlog-cli-stderr"


def _log_to_stderr(*, verbose: int, quiet: bool, restated: frozenset[str] = frozenset()) -> None:
    """clawlog's records (loggers ``clawlog.*``) to stderr, never stdout: ``--json``
    output always parses. Warnings and errors by default; ``-v`` info, ``-vv`` debug.
    Records of the log events in ``restated`` are left out unless ``-v``: the command
    says the same in its own one line."""
    import logging  # after parsing: `clawlog --help` does not need it

    level = logging.ERROR if quiet else max(logging.DEBUG, logging.WARNING - 10 * verbose)
    logger = logging.getLogger("clawlog")
    for old in [h for h in logger.handlers if h.get_name() == _HANDLER_NAME]:
        logger.removeHandler(old)  # main() run again in one process: one handler
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(logging.Formatter("clawlog: %(levelname)s %(name)s: %(message)s"))
    if restated and not verbose:
        handler.addFilter(_Unrestated(restated))
    logger.addHandler(handler)
    logger.setLevel(level)


#: The commands that fold read models: a projection that fails there is the command's own
#: line ("read model X failed at position N: ...", "rebuild: projection X failed at
#: position N: ..."), so the runner's record of it would say it twice.
_READ_MODEL_COMMANDS = (
    "history",
    "board",
    "routes",
    "delegations",
    "audit",
    "usage",
    "mcp",
    "timers",
    "rebuild",
)


def _restated(args: argparse.Namespace) -> frozenset[str]:
    """The log events the command's own output restates (see :class:`_Unrestated`)."""
    restated: set[str] = set()
    if args.command in _READ_MODEL_COMMANDS:
        restated.add("projection failed")
    if getattr(args, "skip_corrupt", False) and not getattr(args, "follow", False):
        # The store's pages, a subscription and the projection runner each log what they
        # skip; the summary line names every position. Not with `tail -f`: its summary
        # comes only when it is stopped, hours later perhaps, so each skip is said as met.
        restated |= {
            "skipped a corrupt event",
            "stepping over rows the log cannot read",
            "stepped over rows the log cannot read",
        }
    return frozenset(restated)


class _Unrestated:
    """A logging filter: False for a record of one of the ``restated`` log events (a
    clawlog record carries its bare event as ``record.event``)."""

    def __init__(self, restated: frozenset[str]) -> None:
        self._restated = restated

    def filter(self, record: logging.LogRecord) -> bool:
        return getattr(record, "event", None) not in self._restated
