"""The command line as people expect it: --version, help everywhere, global options
before or after the command, and clawlog's own log records on stderr."""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
from importlib.metadata import version
from pathlib import Path

import pytest

from clawlog.cli.arguments import build_parser

from .support import clawlog, python, write_board, write_log

COMMANDS = [
    "demo",
    "tail",
    "history",
    "board",
    "routes",
    "delegations",
    "lineage",
    "audit",
    "usage",
    "mcp",
    "rebuild",
    "replay",
    "doctor",
    "tools",
    "timers",
    "export-otel",
    "verify",
    "ui",
    "timeline",
]


def test_version_prints_the_installed_version() -> None:
    done = clawlog("--version")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == f"clawlog {version('clawlog')}\n"


def test_the_help_lists_every_command_and_says_what_json_prints() -> None:
    done = clawlog("--help")
    assert done.returncode == 0 and done.stderr == ""
    listed = set(re.findall(r"^ {4}([\w-]+) ", done.stdout, re.MULTILINE))  # indented once more
    assert listed == set(COMMANDS)
    text = " ".join(done.stdout.split())
    assert "one JSON document (an object or an array) for the snapshot commands" in text
    assert "JSON Lines, one event object per line, for the streams (tail, the replay" in text
    assert "--version" in text and "--db LOG" in text and "-v, --verbose" in text


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_has_its_own_help(command: str) -> None:
    done = clawlog(command, "--help")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith(f"usage: clawlog {command}")
    assert "global options (before or after the command)" in done.stdout


def test_every_command_and_option_says_what_it_does() -> None:
    parser = build_parser()
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert sorted(commands.choices) == sorted(COMMANDS)
    assert all(choice.help for choice in commands._choices_actions)
    for name, command in [("clawlog", parser), *commands.choices.items()]:
        for action in command._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
        assert command.description, name


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("options") / "log.db"
    write_log(path, 20)
    return str(path)


@pytest.mark.parametrize(
    "argv",
    [
        ("--db", "{log}", "--json", "tail", "-n", "3"),
        ("tail", "-n", "3", "--db", "{log}", "--json"),
        ("--json", "tail", "--db", "{log}", "-n", "3"),
        ("--db", "elsewhere.db", "tail", "--db", "{log}", "-n", "3", "--json"),
    ],
    ids=["before", "after", "split", "the-last-wins"],
)
def test_global_options_go_before_or_after_the_command(log: str, argv: tuple[str, ...]) -> None:
    done = clawlog(*(arg.format(log=log) for arg in argv))
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 3 and done.stdout.startswith("{")


def test_a_global_option_before_the_command_is_not_reset_by_it(log: str) -> None:
    done = clawlog("--db", log, "board", "nope")  # names the log given, not the default
    assert done.returncode == 2 and "no team 'nope'" in done.stderr


def corrupt_board(path: Path) -> None:
    """A log whose task board projection fails (a task's payload is not an object)."""
    write_board(path, "release", ["one", "two"])
    db = sqlite3.connect(path)
    try:
        with db:
            db.execute("UPDATE events SET payload = x'ff' WHERE version = 3")
    finally:
        db.close()


def test_clawlogs_log_records_go_to_stderr_and_json_still_parses(tmp_path: Path) -> None:
    log = tmp_path / "broken.db"
    corrupt_board(log)
    done = clawlog("rebuild", "--db", str(log), "--json")
    assert done.returncode == 1, done.stderr  # the board failed (tests/cli/test_rebuild_*)
    assert set(json.loads(done.stdout)) == {"views", "position", "failed"}
    # rebuild's own line restates the runner's record of the failure: one line, not two
    [line] = done.stderr.splitlines()
    assert line.startswith("rebuild: projection task_boards failed at position 3: "), line
    verbose = clawlog("rebuild", "--db", str(log), "--json", "-v")
    assert "clawlog: ERROR clawlog.projections.runner: projection failed" in verbose.stderr
    assert set(json.loads(verbose.stdout)) == {"views", "position", "failed"}
    quiet = clawlog("rebuild", "--db", str(log), "--json", "-q")
    assert "WARNING" not in quiet.stderr and "rebuild: projection " in quiet.stderr
    assert quiet.stdout.startswith("{")


def modules_loaded_by(argv: list[str]) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``clawlog ARGV``."""
    done = python(
        "import sys\n"
        "from clawlog.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sys.modules), file=sys.stderr)\n"
    )
    assert "Traceback" not in done.stderr
    return set(done.stderr.splitlines()[-1].split())


def test_help_and_version_load_neither_the_log_nor_the_runtime() -> None:
    heavy = {"asyncio", "msgspec", "structlog", "rich", "pykka", "mcp", "docker"}
    for argv in (["--help"], ["tail", "--help"], ["--version"]):
        loaded = modules_loaded_by(argv)
        assert not loaded & heavy, (argv, loaded & heavy)
        ours = {name for name in loaded if name.startswith("clawlog.")}
        allowed = {"clawlog.cli", "clawlog.cli.arguments", "clawlog.cli.errors"}
        assert ours <= allowed | {"clawlog.cli.points"}, ours  # --since's parser: stdlib only


def test_tail_loads_the_log_but_not_the_runtime_or_the_read_models(log: str) -> None:
    loaded = modules_loaded_by(["tail", "-n", "1", "--db", log])
    assert "clawlog.events" in loaded
    for package in ("clawlog.actors", "clawlog.projections", "clawlog.tools", "pykka", "mcp"):
        assert package not in loaded
