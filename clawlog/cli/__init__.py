"""The ``clawlog`` command: the demo, and readers over a log.

``main`` parses the command line, sends clawlog's own log records to stderr, runs the
command, and reports every user error in one line on stderr with exit status 2. Parsing
needs only argparse: the log, the read models and the runtime are imported by the
commands that use them (see ``commands.py``), so ``clawlog --help`` starts at once.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .arguments import build_parser
from .errors import CliError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``clawlog`` with ``argv`` (default: the process's arguments); the exit status."""
    args = build_parser().parse_args(argv)
    _log_to_stderr(verbose=args.verbose, quiet=args.quiet)
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
    return status


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from .commands import run_command

    return asyncio.run(run_command(args))


_HANDLER_NAME = "clawlog-cli-stderr"


def _log_to_stderr(*, verbose: int, quiet: bool) -> None:
    """clawlog's records (loggers ``clawlog.*``) to stderr, never stdout: ``--json``
    output always parses. Warnings and errors by default; ``-v`` info, ``-vv`` debug."""
    import logging  # after parsing: `clawlog --help` does not need it

    level = logging.ERROR if quiet else max(logging.DEBUG, logging.WARNING - 10 * verbose)
    logger = logging.getLogger("clawlog")
    for old in [h for h in logger.handlers if h.get_name() == _HANDLER_NAME]:
        logger.removeHandler(old)  # main() run again in one process: one handler
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(logging.Formatter("clawlog: %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(level)
