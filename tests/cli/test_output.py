"""What the commands print: one JSON document or JSON Lines with --json, lines that are
never wrapped through a pipe, a quiet end when the reader closes the pipe, and data shown
as it is (a ``[bold]`` in a task subject is text, not markup)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .support import ROOT, clawlog, run_in_a_terminal, write_app_notes, write_board, write_log


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = tmp_path_factory.mktemp("output") / "demo.db"
    made = clawlog("-v", "demo", "--db", str(db))
    assert made.returncode == 0, made.stderr
    # -v: clawlog's own records at INFO, on stderr only.
    assert "clawlog: INFO clawlog.actors.system: system open" in made.stderr
    assert "INFO" not in made.stdout
    return str(db)


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        (("history", "lead", "demo-user"), list),
        (("board", "release"), dict),
        (("routes",), list),
        (("delegations",), list),
        (("audit",), list),
        (("audit", "--refused"), list),
        (("mcp",), list),
        (("rebuild",), dict),
        (("replay", "--as-of", "999999", "--stream", "team/release"), dict),
        (("replay", "--rerun", "lead", "demo-user"), dict),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else value.__name__,
)
def test_a_snapshot_command_prints_one_json_document(
    demo_log: str, command: tuple[str, ...], kind: type
) -> None:
    done = clawlog(*command, "--db", demo_log, "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("}\n") or done.stdout.endswith("]\n")
    assert isinstance(json.loads(done.stdout), kind)  # the whole output is one document
    assert done.stdout.count("\n") == 1


@pytest.mark.parametrize(
    "command",
    [("tail", "-n", "0"), ("tail", "--type", "tool.call_refused"), ("replay",)],
    ids=" ".join,
)
def test_a_stream_prints_json_lines_one_event_per_line(
    demo_log: str, command: tuple[str, ...]
) -> None:
    done = clawlog(*command, "--db", demo_log, "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events
    positions = [e["position"] for e in events]
    assert positions == sorted(set(positions))
    for event in events:
        assert {"position", "stream", "type", "event", "recorded_at"} <= set(event)
        assert event["event"]["type"] == event["type"]


def test_tail_and_the_replay_timeline_print_the_same_event_objects(demo_log: str) -> None:
    tail = clawlog("tail", "-n", "0", "--db", demo_log, "--json")
    timeline = clawlog("replay", "--db", demo_log, "--json")
    assert tail.returncode == timeline.returncode == 0
    assert tail.stdout == timeline.stdout


def test_an_event_of_a_type_clawlog_does_not_know_is_shown_by_its_fields(
    tmp_path: Path,
) -> None:
    log = tmp_path / "app.db"
    write_app_notes(log, ["first", "two\nlines"])
    as_json = clawlog("tail", "--db", str(log), "--json")
    assert as_json.returncode == 0, as_json.stderr
    events = [json.loads(line)["event"] for line in as_json.stdout.splitlines()]
    assert events == [
        {"type": "app.note", "text": "first", "tags": ["app"]},
        {"type": "app.note", "text": "two\nlines", "tags": ["app"]},
    ]
    shown = clawlog("tail", "--db", str(log)).stdout.splitlines()
    assert shown[0].endswith('app/notes app.note text=first tags=["app"]')
    assert shown[1].endswith('text=two\\nlines tags=["app"]')  # one line per event


def test_a_piped_tail_prints_one_line_per_event_however_long(tmp_path: Path) -> None:
    log = tmp_path / "long.db"
    write_log(log, 30, long_field=300)
    done = clawlog("tail", "-n", "0", "--db", str(log))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 30
    assert all(f"kind={'k' * 120}" in line for line in lines)  # summaries keep 120 chars


SUBJECTS = ["x" * 200, "a [bold]tag[/bold] and [teammate:dev]"]


def test_a_piped_listing_keeps_each_row_on_one_line(tmp_path: Path) -> None:
    log = tmp_path / "board.db"
    write_board(log, "release", SUBJECTS)
    done = clawlog("board", "release", "--db", str(log))
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("t")]
    assert rows[0].startswith("task\t") and len(rows) == 3  # the header, then one per task
    assert SUBJECTS[0] in rows[1] and SUBJECTS[1] in rows[2]


def test_on_a_terminal_data_is_shown_as_it_is_not_as_markup(tmp_path: Path) -> None:
    log = tmp_path / "board.db"
    write_board(log, "release", SUBJECTS)
    shown = run_in_a_terminal("board", "release", "--db", str(log))
    assert "\x1b[" in shown  # styled: it is drawn for a terminal
    assert SUBJECTS[1] in shown
    events = run_in_a_terminal("tail", "--db", str(log))
    assert "subject=a [bold]tag[/bold] and [teammate:dev]" in events


@pytest.mark.parametrize("output", [(), ("--json",)], ids=["text", "json"])
def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path, output: tuple[str, ...]) -> None:
    log = tmp_path / "big.db"
    write_log(log, 3000)  # far more than a pipe holds
    with subprocess.Popen(
        [sys.executable, "-m", "clawlog", "tail", "-n", "0", "--db", str(log), *output],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        first = child.stdout.readline()
        child.stdout.close()  # as `| head -1` does
        errors = child.stderr.read()
        assert child.wait() == 1  # as Python's own exit status on EPIPE
    assert errors == b""
    assert b"actor.started" in first


def test_tail_follows_through_a_pipe_and_ctrl_c_ends_it_quietly(tmp_path: Path) -> None:
    log = tmp_path / "live.db"
    write_log(log, 5)
    with subprocess.Popen(
        [sys.executable, "-m", "clawlog", "tail", "-f", "-n", "1", "--db", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().startswith("      5 ")
        write_log(log, 1)  # another writer appends while tail follows
        assert child.stdout.readline().startswith("      6 ")  # flushed as it lands
        child.send_signal(signal.SIGINT)
        _, errors = child.communicate()
    assert child.returncode == 130 and errors == ""


def test_a_failed_tool_call_says_failed_once_in_the_history() -> None:
    from clawlog.cli.readers import _failed

    # The pipeline's messages start with the tool's name ("web_fetch failed: ..."); a
    # message recorded without it gets the prefix.
    assert _failed("web_fetch", "web_fetch failed: HTTP 404") == "web_fetch failed: HTTP 404"
    assert _failed("exec", "no reply in 30 s") == "exec failed: no reply in 30 s"
