"""A corrupt event stops a reader with one line naming its position (exit status 2);
``--skip-corrupt`` steps over it, says which positions it skipped, and exits 0."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from clawlog.projections import views_path_for
from clawlog.projections.testing import write_mixed_log_file

from .damage import flip_payload_byte
from .support import clawlog, write_board, write_log


def corrupt(log: Path, *positions: int) -> None:
    """Payloads that do not decode at ``positions`` (SQLite still reads the rows)."""
    db = sqlite3.connect(log)
    try:
        with db:
            db.executemany(
                "UPDATE events SET payload = x'ff' WHERE position = ?", [(p,) for p in positions]
            )
    finally:
        db.close()


@pytest.fixture
def actors_log(tmp_path: Path) -> Path:
    """300 actor.started events; 50 and 250 do not decode."""
    log = tmp_path / "actors.db"
    write_log(log, 300)
    corrupt(log, 50, 250)
    return log


@pytest.mark.parametrize(
    "command",
    [
        ("tail", "-n", "0"),
        ("tail", "-n", "60"),
        ("replay",),
        ("replay", "--stream", "agent/batch0"),
    ],
    ids=" ".join,
)
def test_a_corrupt_event_stops_a_log_reader_in_one_line(
    actors_log: Path, command: tuple[str, ...]
) -> None:
    done = clawlog(*command, "--db", str(actors_log))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    position = 250 if "60" in command else 50  # -n 60 reads from 241 on
    assert f"corrupt event at position {position}" in line and str(actors_log) in line


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (("tail", "-n", "0"), 298),
        (("tail", "-n", "0", "--limit", "60"), 60),
        (("replay",), 298),
        (("replay", "--type", "actor.started"), 298),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else str(value),
)
def test_skip_corrupt_steps_over_and_names_what_it_skipped(
    actors_log: Path, command: tuple[str, ...], shown: int
) -> None:
    done = clawlog(*command, "--skip-corrupt", "--db", str(actors_log), "--json")
    assert done.returncode == 0, done.stderr
    positions = [json.loads(line)["position"] for line in done.stdout.splitlines()]
    assert len(positions) == shown and 50 not in positions
    reports = [line for line in done.stderr.splitlines() if "skipped" in line]
    if shown == 60:  # stopped at 61 events' worth: 250 was never reached
        assert reports == ["clawlog: skipped 1 corrupt event(s) at position 50"]
    else:
        assert reports == ["clawlog: skipped 2 corrupt event(s) at positions 50, 250"]
        assert 250 not in positions and positions[-1] == 300


def test_skip_corrupt_on_a_stream_and_as_of_a_position(actors_log: Path) -> None:
    timeline = clawlog(
        "replay", "--stream", "agent/batch0", "--skip-corrupt", "--db", str(actors_log), "--json"
    )
    assert timeline.returncode == 0, timeline.stderr
    assert len(timeline.stdout.splitlines()) == 99
    assert "skipped 1 corrupt event(s) at position 50" in timeline.stderr


def board_log(tmp_path: Path) -> Path:
    """A board of three tasks whose second task's event (position 3) is corrupt."""
    log = tmp_path / "board.db"
    write_board(log, "release", ["one", "two", "three"])
    corrupt(log, 3)
    return log


def test_a_read_model_stops_at_a_corrupt_event_naming_it_and_the_way_out(tmp_path: Path) -> None:
    log = board_log(tmp_path)
    done = clawlog("board", "release", "--db", str(log))
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()[-1:]
    assert "read model 'task_boards' failed at position 3" in line
    assert "--skip-corrupt" in line
    assert "Traceback" not in done.stderr


def test_skip_corrupt_builds_the_model_apart_and_leaves_the_shared_one_failed(
    tmp_path: Path,
) -> None:
    log = board_log(tmp_path)
    assert clawlog("board", "release", "--db", str(log)).returncode == 2
    skipping = clawlog("board", "release", "--skip-corrupt", "--db", str(log), "--json")
    assert skipping.returncode == 0, skipping.stderr
    tasks = json.loads(skipping.stdout)["tasks"]
    assert [t["subject"] for t in tasks] == ["one", "three"]
    assert skipping.stderr.splitlines()[-1] == ("clawlog: skipped 1 corrupt event(s) at position 3")
    # The shared views file never records the skip: the damage is still reported there.
    again = clawlog("board", "release", "--db", str(log))
    assert again.returncode == 2 and "failed at position 3" in again.stderr
    assert views_path_for(log).exists()


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("skip") / "mixed.db"
    asyncio.run(write_mixed_log_file(path, 600))
    return path


@pytest.mark.parametrize(
    ("command", "model", "type_", "stream"),
    [
        (("history", "agent0", "user0"), "session_history", "session.turn_started", "session/"),
        (("board", "team1"), "task_boards", "team.task_created", "team/team1"),
        (("routes",), "handoff_routes", "handoff.routed", ""),
        (("delegations",), "delegations", "delegation.requested", ""),
        (("audit",), "tool_audit", "tool.call_requested", ""),
        (("mcp",), "mcp_health", "mcp.connecting", ""),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else None,
)
def test_every_read_model_listing_stops_at_a_corrupt_event_or_skips_it(
    mixed: Path, tmp_path: Path, command: tuple[str, ...], model: str, type_: str, stream: str
) -> None:
    log = tmp_path / "mixed.db"
    shutil.copyfile(mixed, log)
    db = sqlite3.connect(log)
    try:
        [(position,)] = db.execute(
            "SELECT position FROM events WHERE type = ? AND stream LIKE ? "
            "ORDER BY position LIMIT 1",
            (type_, f"{stream}%"),
        ).fetchall()
    finally:
        db.close()
    corrupt(log, position)

    stopped = clawlog(*command, "--db", str(log), "--json")
    assert stopped.returncode == 2 and stopped.stdout == ""
    [line] = stopped.stderr.splitlines()[-1:]
    assert f"read model {model!r} failed at position {position}" in line
    assert "Traceback" not in stopped.stderr

    skipping = clawlog(*command, "--skip-corrupt", "--db", str(log), "--json")
    assert skipping.returncode == 0, skipping.stderr
    json.loads(skipping.stdout)
    report = skipping.stderr.splitlines()[-1]
    assert report == f"clawlog: skipped 1 corrupt event(s) at position {position}"


def test_rerun_refuses_skip_corrupt_saying_why(actors_log: Path) -> None:
    done = clawlog("replay", "--rerun", "lead", "u", "--skip-corrupt", "--db", str(actors_log))
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert "compares with every recorded event" in line


def test_state_as_of_a_position_stops_at_a_corrupt_event_or_skips_it(tmp_path: Path) -> None:
    log = board_log(tmp_path)
    args = ("replay", "--as-of", "10", "--stream", "team/release", "--db", str(log), "--json")
    stopped = clawlog(*args)
    assert stopped.returncode == 2
    [line] = stopped.stderr.splitlines()
    assert "corrupt event at position 3" in line
    skipping = clawlog(*args, "--skip-corrupt")
    assert skipping.returncode == 0, skipping.stderr
    tasks = json.loads(skipping.stdout)["state"]["tasks"]
    assert [t["subject"] for t in tasks.values()] == ["one", "three"]
    assert skipping.stderr.splitlines() == ["clawlog: skipped 1 corrupt event(s) at position 3"]


def test_rebuild_skip_corrupt_gets_the_read_models_past_a_bad_row_for_good(
    tmp_path: Path,
) -> None:
    # A row of an append-only log cannot be fixed: rebuild --skip-corrupt is the way on.
    log = tmp_path / "app.db"
    asyncio.run(write_mixed_log_file(log, 400))
    with sqlite3.connect(log) as db:
        [(position,)] = db.execute(
            "SELECT min(position) FROM events WHERE stream = 'session/agent0/user0' "
            "AND type = 'session.turn_started'"
        ).fetchall()
    flip_payload_byte(log, position)
    failing = clawlog("history", "agent0", "user0", "--db", str(log))
    assert failing.returncode == 2
    assert "clawlog rebuild --skip-corrupt" in failing.stderr
    rebuilt = clawlog("rebuild", "--skip-corrupt", "--json", "--db", str(log))
    assert rebuilt.returncode == 0, rebuilt.stderr
    document = json.loads(rebuilt.stdout)
    assert (document["failed"], document["skipped"]) == ([], [position])
    assert rebuilt.stderr.splitlines() == [
        f"clawlog: skipped 1 corrupt event(s) at position {position}"
    ]
    after = clawlog("history", "agent0", "user0", "--db", str(log))  # no flag needed now
    assert after.returncode == 0, after.stderr
    assert after.stdout.strip()
