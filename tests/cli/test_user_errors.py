"""Every user error is one line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import (
    READERS,
    ROOT,
    assert_user_error,
    clawlog,
    closed_port,
    python,
    refusing_postgres,
    write_log,
)


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("errors") / "log.db"
    write_log(path, 10)
    return str(path)


@pytest.mark.parametrize("command", READERS, ids=" ".join)
def test_a_missing_log_file(command: tuple[str, ...], tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    assert_user_error(clawlog(*command, "--db", str(missing)), str(missing), "no such file")
    assert not missing.exists()


@pytest.mark.parametrize(
    "command", [("demo",), ("tail",), ("board", "x"), ("replay",)], ids=" ".join
)
def test_a_file_that_is_not_a_clawlog_log_is_left_untouched(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    readme = tmp_path / "README.md"
    readme.write_bytes((ROOT / "README.md").read_bytes())
    before = readme.read_bytes()
    assert_user_error(clawlog(*command, "--db", str(readme)), "is not a clawlog event log")
    assert readme.read_bytes() == before


@pytest.mark.parametrize("command", [("demo",), ("tail",)], ids=" ".join)
def test_a_directory_is_not_a_log(command: tuple[str, ...], tmp_path: Path) -> None:
    assert_user_error(clawlog(*command, "--db", str(tmp_path)), "is a directory")


def test_the_demo_needs_an_existing_directory(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "demo.db"
    assert_user_error(clawlog("demo", "--db", str(target)), "no such directory")
    assert not (tmp_path / "no").exists()


def test_an_unreachable_postgresql_server_without_showing_the_password() -> None:
    url = f"postgresql://u:s3cret@127.0.0.1:{closed_port()}/x"
    done = clawlog("tail", "--db", url)
    assert_user_error(done, "cannot reach PostgreSQL", "postgresql://u:***@127.0.0.1")
    assert "s3cret" not in done.stderr


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://127.0.0.1:{port}/x?sslmode=disable&password=s3cret",
        "postgresql://u:p@s3cret@127.0.0.1:{port}/x",  # an unescaped @ in the password
    ],
    ids=["query", "at-sign"],
)
def test_no_password_spelling_reaches_the_error_message(url: str) -> None:
    done = clawlog("board", "t", "--db", url.format(port=closed_port()))
    assert_user_error(done, "cannot reach PostgreSQL")
    assert "s3cret" not in done.stderr


@pytest.mark.parametrize("command", [("tail",), ("board", "release")], ids=" ".join)
def test_a_postgresql_server_that_refuses_the_login(command: tuple[str, ...]) -> None:
    with refusing_postgres() as port:
        done = clawlog(*command, "--db", f"postgresql://u:s3cret@127.0.0.1:{port}/x")
    assert_user_error(done, "password authentication failed")
    assert "s3cret" not in done.stderr


def test_a_malformed_postgresql_url() -> None:
    assert_user_error(clawlog("tail", "--db", "postgresql://u@localhost:port/x"), "postgresql://")


def test_without_asyncpg_the_message_says_what_to_install() -> None:
    # `None` in sys.modules makes `import asyncpg` fail as if it were not installed.
    done = python(
        "import sys\n"
        "sys.modules['asyncpg'] = None\n"
        "from clawlog.cli import main\n"
        f"sys.exit(main(['tail', '--db', 'postgresql://u@127.0.0.1:{closed_port()}/x']))\n"
    )
    assert_user_error(done, "pip install 'clawlog[postgres]'")


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (("board", "nope"), "no team 'nope'"),
        (("history", "lead", "nobody"), "no session 'nobody' for agent 'lead'"),
        (("history", "nobody", "demo-user"), "no session 'demo-user' for agent 'nobody'"),
        (("mcp", "--server", "nope"), "no MCP server named 'nope'"),
        (("replay", "--rerun", "nobody", "x"), "nothing is recorded on 'session/nobody/x'"),
        (("replay", "--as-of", "1", "--stream", "team/nope"), "nothing is recorded"),
    ],
    ids=lambda value: value if isinstance(value, str) else " ".join(value),
)
def test_an_unknown_team_agent_session_or_server(
    log: str, command: tuple[str, ...], message: str
) -> None:
    assert_user_error(clawlog(*command, "--db", log), message)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "the following arguments are required: COMMAND"),
        (("nope",), "invalid choice: 'nope'"),
        (("tail", "--nope"), "unrecognized arguments: --nope"),
        (("tail", "-n", "x"), "not a count"),
        (("tail", "-n", "-3"), "not a count"),
        (("board",), "the following arguments are required: team_id"),
        (("demo", "--json"), "unrecognized arguments: --json"),
        (("--json", "demo"), "demo prints for people"),
    ],
    ids=lambda value: value if isinstance(value, str) else " ".join(value) or "nothing",
)
def test_a_usage_error(argv: tuple[str, ...], message: str) -> None:
    assert_user_error(clawlog(*argv), message, "--help")


def test_rebuild_into_a_file_that_is_not_a_read_model(log: str, tmp_path: Path) -> None:
    foreign = tmp_path / "notes.txt"
    foreign.write_text("just text\n")
    assert_user_error(clawlog("rebuild", "--db", log, "--views", str(foreign)), "notes.txt")
    assert foreign.read_text() == "just text\n"


def test_an_option_the_command_does_not_take_is_that_commands_usage_error(log: str) -> None:
    done = clawlog("board", "release", "--refused", "--db", log)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "clawlog board: unrecognized arguments: --refused (see `clawlog board --help`)"
    ]
