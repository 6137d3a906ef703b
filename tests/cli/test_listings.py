"""Every listing takes --since and --limit; listings print as they read: tab-separated
lines off a terminal, one JSON document written incrementally with --json."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clawlog.cli.listing import CHUNK
from clawlog.cli.points import EPOCH_LIKE, parse_point
from clawlog.projections.testing import write_mixed_log_file

from .support import ROOT, clawlog, run_in_a_terminal, write_board, write_log


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A log with sessions, tool calls, teams, routes, delegations and MCP servers."""
    path = tmp_path_factory.mktemp("listings") / "mixed.db"
    asyncio.run(write_mixed_log_file(path, 12000))
    return str(path)


def events(log: str, *args: str) -> list[dict[str, Any]]:
    """What ``clawlog ARGS --json`` prints as JSON Lines (tail, the replay timeline)."""
    done = clawlog(*args, "--db", log, "--json")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def document(log: str, *args: str) -> Any:
    """The one JSON document ``clawlog ARGS --json`` prints."""
    done = clawlog(*args, "--db", log, "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    return json.loads(done.stdout)


def iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat()


# -- the syntax of --since and --until ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "position", "time"),
    [
        ("1200", 1200, None),
        ("@1795599000", None, 1795599000.0),
        ("@1795599000.25", None, 1795599000.25),
        ("2026-11-25T09:30:00+00:00", None, 1795599000.0),
        ("2026-11-25T09:30", None, 1795599000.0),  # UTC when it has no offset
        ("2026-11-25T10:30+01:00", None, 1795599000.0),
        ("2026-11-25T09:30:00Z", None, 1795599000.0),
    ],
)
def test_a_point_is_a_position_an_iso_time_or_at_epoch(
    text: str, position: int | None, time: float | None
) -> None:
    point = parse_point(text)
    assert (point.position, point.time) == (position, time)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (str(EPOCH_LIKE), f"did you mean @{EPOCH_LIKE}"),
        ("1795599000", "did you mean @1795599000"),
        ("0", "log positions start at 1"),
        ("yesterday", "is not a log position"),
        ("@soon", "is not a log position"),
        ("12.5", "is not a log position"),
    ],
)
def test_a_point_that_is_not_one_is_refused_saying_what_to_write(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        parse_point(text)
    assert message in str(refused.value)


@pytest.mark.parametrize(
    "command",
    [
        ("tail",),
        ("history", "agent0", "user0"),
        ("board", "team1"),
        ("routes",),
        ("delegations",),
        ("audit",),
        ("mcp",),
        ("replay",),
        ("replay", "--until"),
    ],
    ids=" ".join,
)
def test_epoch_seconds_without_the_at_are_refused_by_every_listing(
    mixed: str, command: tuple[str, ...]
) -> None:
    option = () if command[-1] == "--until" else ("--since",)
    done = clawlog(*command, *option, "1795599000", "--db", mixed)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert "did you mean @1795599000" in line


# -- --since and --limit on the log scanners ------------------------------------------------


def test_tail_since_a_position_a_time_or_at_epoch(tmp_path: Path) -> None:
    log = str(tmp_path / "log.db")
    write_log(Path(log), 300)  # three appends of 100 events: three commit times
    everything = events(log, "tail", "-n", "0")
    assert [e["position"] for e in everything] == list(range(1, 301))
    assert [e["position"] for e in events(log, "tail", "--since", "250")] == list(range(250, 301))
    second = everything[150]["recorded_at"]  # the second append's commit time
    later = [e["position"] for e in everything if e["recorded_at"] >= second]
    assert later[0] <= 151 and later[-1] == 300
    assert [e["position"] for e in events(log, "tail", "--since", f"@{second}")] == later
    # An ISO time keeps microseconds: it may fall just before the commit, not after it.
    shown = [e["position"] for e in events(log, "tail", "--since", iso(second - 2e-6))]
    assert set(later) <= set(shown) and shown == sorted(shown)
    assert all(everything[p - 1]["recorded_at"] >= second - 1e-5 for p in shown)
    assert events(log, "tail", "--since", "@4000000000") == []  # after everything
    assert events(log, "tail", "--since", "301") == []


def test_tail_limit_takes_the_first_rows_and_last_n_the_last(tmp_path: Path) -> None:
    log = str(tmp_path / "log.db")
    write_log(Path(log), 120)
    assert [e["position"] for e in events(log, "tail", "--limit", "4")] == [1, 2, 3, 4]
    assert [e["position"] for e in events(log, "tail", "--since", "10", "--limit", "3")] == [
        10,
        11,
        12,
    ]
    assert [e["position"] for e in events(log, "tail", "-n", "5", "--limit", "2")] == [116, 117]
    assert len(events(log, "tail")) == 50  # the default without --since/--limit
    assert len(events(log, "tail", "--since", "1")) == 120  # --since alone: all from there
    assert [e["position"] for e in events(log, "tail", "--since", "100", "-n", "3")] == [
        118,
        119,
        120,
    ]


def test_replay_since_and_until_take_positions_and_times(tmp_path: Path) -> None:
    log = str(tmp_path / "log.db")
    write_log(Path(log), 300)
    everything = events(log, "replay")
    positions = [e["position"] for e in events(log, "replay", "--since", "20", "--until", "30")]
    assert positions == list(range(20, 30))  # --until is exclusive
    second, third = everything[150]["recorded_at"], everything[250]["recorded_at"]
    window = events(log, "replay", "--since", f"@{second}", "--until", f"@{third}")
    expected = [e["position"] for e in everything if second <= e["recorded_at"] < third]
    assert [e["position"] for e in window] == expected and expected
    assert len(events(log, "replay", "--since", "5", "-n", "7")) == 7
    assert events(log, "replay", "--until", "2000-01-01T00:00:00") == []


# -- --since and --limit on the read-model listings -----------------------------------------


def test_history_since_a_position_or_a_time(mixed: str) -> None:
    entries = document(mixed, "history", "agent0", "user0")
    assert len(entries) > 6
    middle = entries[len(entries) // 2]["position"]
    since = document(mixed, "history", "agent0", "user0", "--since", str(middle))
    assert since == [e for e in entries if e["position"] >= middle]
    times = {e["position"]: e["recorded_at"] for e in events(mixed, "tail", "-n", "0")}
    at = times[middle]
    by_time = document(mixed, "history", "agent0", "user0", "--since", f"@{at}")
    assert by_time == [e for e in entries if times[e["position"]] >= at]
    limited = document(mixed, "history", "agent0", "user0", "--since", str(middle), "--limit", "2")
    assert limited == since[:2]


@pytest.mark.parametrize(
    "command",
    [
        ("history", "agent0", "user0"),
        ("board", "team1"),
        ("routes",),
        ("delegations",),
        ("audit",),
        ("audit", "--refused"),
        ("audit", "--tool", "exec"),
        ("usage", "--by", "session"),
        ("mcp", "--all"),
    ],
    ids=" ".join,
)
def test_every_listing_takes_limit_and_since(mixed: str, command: tuple[str, ...]) -> None:
    def rows(*extra: str) -> list[Any]:
        found = document(mixed, *command, *extra)
        return found["tasks"] if isinstance(found, dict) else found

    everything = rows()
    assert len(everything) >= 3, "the mixed log has rows for every listing"
    assert rows("--limit", "2") == everything[:2]
    assert rows("--limit", "0") == everything  # 0: all
    assert rows("--since", "@4000000000") == []  # a time after every row
    assert rows("--since", "@0") == everything
    if command[0] != "mcp":  # servers keep no log position
        assert rows("--since", "1") == everything
        assert rows("--since", "999999") == []


def test_mcp_since_refuses_a_position_saying_why(mixed: str) -> None:
    done = clawlog("mcp", "--db", mixed, "--since", "12")
    assert done.returncode == 2 and "not a log position" in done.stderr


# -- how listings print ------------------------------------------------------------------


def test_off_a_terminal_a_listing_is_tab_separated_under_one_header(tmp_path: Path) -> None:
    log = tmp_path / "board.db"
    write_board(log, "release", ["plain", "a\ttab and a\nnewline", "back\\slash"])
    done = clawlog("board", "release", "--db", str(log))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "task\tsubject\tprio\tstatus\tby\tblocked by\tresult"
    rows = [line.split("\t") for line in lines[1:]]
    assert [len(row) for row in rows] == [7, 7, 7]  # a cell's own tab does not split it
    assert [row[1] for row in rows] == ["plain", "a\\ttab and a\\nnewline", "back\\\\slash"]
    assert [row[0] for row in rows] == ["t1", "t2", "t3"]


def test_an_empty_listing_is_its_header_line_or_an_empty_json_list(mixed: str) -> None:
    done = clawlog("audit", "--tool", "no-such-tool", "--db", mixed)
    assert done.returncode == 0 and done.stdout.splitlines() == [
        "pos\tcall\ttool\tstream\toutcome\tstep\treason\tapproval\tverdict\tpolicy\treruns\tresume"
    ]
    assert document(mixed, "audit", "--tool", "no-such-tool") == []
    board = document(mixed, "board", "team1", "--since", "@4000000000")
    assert board["team"] == "team1" and board["tasks"] == []


def test_json_written_page_by_page_is_still_one_document(mixed: str) -> None:
    """More rows than a page (1000): the document is written in pieces, and parses."""
    calls = document(mixed, "audit")
    assert len(calls) > 1000
    assert len({c["call_id"] + c["stream"] for c in calls}) == len(calls)  # no page twice
    assert document(mixed, "audit", "--limit", "1001") == calls[:1001]


def test_more_rows_than_a_page_come_in_log_order_once_each(mixed: str) -> None:
    done = clawlog("audit", "--db", mixed)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()[1:]
    assert len(rows) == len(document(mixed, "audit")) > 1000


# -- the log scanners print as they read -------------------------------------------------


def corrupt(log: Path, *positions: int) -> None:
    """Payloads that do not decode at ``positions`` (the rows stay readable by SQLite)."""
    import sqlite3

    db = sqlite3.connect(log)
    try:
        with db:
            db.executemany(
                "UPDATE events SET payload = x'ff' WHERE position = ?", [(p,) for p in positions]
            )
    finally:
        db.close()


@pytest.mark.parametrize(
    "command", [("tail", "-n", "0"), ("replay",), ("tail", "-n", "0", "--json")], ids=" ".join
)
def test_a_log_scanner_prints_before_it_has_read_the_log(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """The log's last event is corrupt: a command that read everything before printing
    would fail there with nothing printed. One that prints as it reads blocks on the full
    pipe long before (the output is far more than a pipe holds), so when the pipe is
    closed after the first line it ends on the closed pipe, never having reached it."""
    log = tmp_path / "big.db"
    write_log(log, 6000)
    corrupt(log, 6000)
    with subprocess.Popen(
        [sys.executable, "-m", "clawlog", *command, "--db", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        first = child.stdout.readline()
        child.stdout.close()
        errors = child.stderr.read()
        assert child.wait() == 1, errors  # the closed pipe, not the corrupt event (2)
    assert b"corrupt" not in errors and errors == b""
    assert b"actor.started" in first


def test_the_corrupt_event_is_reached_when_the_whole_log_is_read(tmp_path: Path) -> None:
    log = tmp_path / "big.db"
    write_log(log, 6000)
    corrupt(log, 6000)
    done = clawlog("tail", "-n", "0", "--db", str(log))
    assert done.returncode == 2
    assert len(done.stdout.splitlines()) == 5999  # every good event, printed before it
    [line] = done.stderr.splitlines()
    assert "corrupt event at position 6000" in line


def test_on_a_terminal_a_long_listing_is_drawn_in_tables_of_a_chunk(tmp_path: Path) -> None:
    log = tmp_path / "board.db"
    write_board(log, "release", [f"task number {n}" for n in range(CHUNK * 2 + 10)])
    shown = run_in_a_terminal("board", "release", "--db", str(log))
    assert shown.count("task board: Crew (release)") == 1  # the title once
    headers = [line for line in shown.splitlines() if "task" in line and "subject" in line]
    assert len(headers) == 3  # the header again at each chunk: 500, 500, 10 rows
    assert "task number 0" in shown and f"task number {CHUNK * 2 + 9}" in shown


def test_a_time_is_found_in_a_log_slightly_out_of_time_order(tmp_path: Path) -> None:
    """Several PostgreSQL writers: an event can follow one stamped a few seconds later.
    The binary search aims CLOCK_SLACK_S earlier, and the exact filter does the rest."""
    import sqlite3

    log = tmp_path / "log.db"
    write_log(log, 300)
    db = sqlite3.connect(log)
    try:
        with db:
            db.execute("UPDATE events SET recorded_at = 1000 + position")
            # Stamped 8 s after its position's neighbours: it waited for the table lock.
            db.execute("UPDATE events SET recorded_at = 1196 WHERE position = 188")
    finally:
        db.close()
    shown = [e["position"] for e in events(str(log), "tail", "--since", "@1195")]
    assert shown == [188, *range(195, 301)]
    window = events(str(log), "replay", "--since", "@1195", "--until", "@1197")
    assert [e["position"] for e in window] == [188, 195, 196]


def test_tail_follow_ends_once_limit_events_were_printed(tmp_path: Path) -> None:
    log = tmp_path / "live.db"
    write_log(log, 2)
    with subprocess.Popen(
        [sys.executable, "-m", "clawlog", "tail", "-f", "--limit", "3", "--db", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    ) as child:
        assert child.stdout is not None
        assert [child.stdout.readline()[:7] for _ in range(2)] == ["      1", "      2"]
        write_log(log, 2)  # two more land: the first is the third event, then it stops
        rest, errors = child.communicate(timeout=60)
    assert child.returncode == 0 and errors == ""
    assert rest.startswith("      3 ") and len(rest.splitlines()) == 1
