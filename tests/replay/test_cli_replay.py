"""``clawlog replay`` as a user runs it: a real subprocess on the demo's SQLite log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]


def clawlog(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clawlog", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("replay") / "demo.db")
    made = clawlog("demo", "--db", db)
    assert made.returncode == 0, made.stderr
    return db


def replay_json(db: str, *args: str) -> Any:
    """The JSON a replay prints; a re-run exits 1 when it diverged, else 0."""
    done = clawlog("replay", "--db", db, "--json", *args)
    assert done.returncode in (0, 1), done.stderr
    printed = json.loads(done.stdout)
    if "--rerun" in args:
        assert done.returncode == (0 if printed["divergence"] is None else 1)
    else:
        assert done.returncode == 0
    return printed


def timeline(db: str, *args: str) -> list[dict[str, Any]]:
    done = clawlog("replay", "--db", db, "--json", *args)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_rerun_of_the_demo_session_matches_and_denying_exec_diverges_at_exec(
    demo_db: str,
) -> None:
    same = replay_json(demo_db, "--rerun", "lead", "demo-user")
    assert same["matched"] and same["divergence"] is None and same["context"] == []
    assert same["turns"] >= 3 and same["tool_calls"] >= 5
    refused = timeline(demo_db, "--type", "tool.call_refused", "--stream", same["stream"])
    denied = replay_json(demo_db, "--rerun", "lead", "demo-user", "--deny", "exec")
    divergence = denied["divergence"]
    assert not denied["matched"] and denied["config_changed"]
    assert (divergence["kind"], divergence["tool"]) == ("outcome", "exec")
    assert divergence["position"] == refused[0]["position"]
    assert divergence["recorded"].startswith("exec refused at approval: deny pattern 'rm -rf'")
    assert divergence["now"].startswith("exec refused at policy")
    board = replay_json(demo_db, "--rerun", "lead", "demo-user", "--deny", "team_tasks")
    assert (board["divergence"]["kind"], board["divergence"]["tool"]) == ("refusal", "team_tasks")
    assert board["divergence"]["iteration"] == 1


def test_rerun_prints_a_readable_report(demo_db: str) -> None:
    done = clawlog("replay", "--db", demo_db, "--rerun", "lead", "demo-user", "--deny", "exec")
    assert done.returncode == 1, done.stderr  # diverged: scripts can tell
    assert "diverged (outcome)" in done.stdout and "recorded: exec refused" in done.stdout
    assert "the tools offered differ (-exec)" in done.stdout


def test_timeline_filters_by_type_correlation_stream_and_time(demo_db: str) -> None:
    everything = timeline(demo_db)
    assert [e["position"] for e in everything] == list(range(1, len(everything) + 1))
    tools = timeline(demo_db, "--type", "tool.*", "--stream-prefix", "session/lead/")
    assert tools and all(e["type"].startswith("tool.") for e in tools)
    assert all(e["stream"].startswith("session/lead/") for e in tools)
    turn = tools[0]["correlation_id"]
    one_turn = timeline(demo_db, "--correlation", turn)
    assert one_turn and {e["correlation_id"] for e in one_turn} == {turn}
    lead = timeline(demo_db, "--actor", "session/lead/demo-user", "-n", "3")
    assert len(lead) == 3 and all(e["actor"] == "session/lead/demo-user" for e in lead)
    middle = everything[len(everything) // 2]["recorded_at"]
    later = timeline(demo_db, "--since", f"@{middle}")
    assert later and all(e["recorded_at"] >= middle for e in later)
    assert timeline(demo_db, "--until", "2000-01-01T00:00:00") == []


def test_state_as_of_a_position_shows_the_board_then(demo_db: str) -> None:
    completed = timeline(demo_db, "--type", "team.task_completed", "--stream", "team/release")
    first = completed[0]["position"]
    before = replay_json(demo_db, "--as-of", str(first - 1), "--stream", "team/release")
    after = replay_json(demo_db, "--as-of", str(first), "--stream", "team/release")
    assert completed_tasks(before) == 0
    assert completed_tasks(after) == 1 and after["position"] == first
    route = timeline(demo_db, "--type", "handoff.routed")[0]
    now = replay_json(demo_db, "--as-of", str(route["position"]), "--stream", route["stream"])
    assert now["state"]["agent"] == "billing"
    session = replay_json(demo_db, "--as-of", "999999", "--stream", "session/lead/demo-user")
    assert session["state"]["messages"][0]["content"] == "Plan the v1.0 release"
    people = clawlog("replay", "--db", demo_db, "--as-of", str(first), "--stream", "team/release")
    assert people.returncode == 0 and "task board" in people.stdout


def completed_tasks(found: dict[str, Any]) -> int:
    return sum(t["status"] == "completed" for t in found["state"]["tasks"].values())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--as-of", "10"), "--as-of needs --stream"),
        (("--as-of", "10", "--stream", "system/guardian"), "no state is known"),
        (("--as-of", "1", "--stream", "team/nope"), "nothing is recorded on 'team/nope'"),
        (("--rerun", "lead", "nobody"), "nothing is recorded on 'session/lead/nobody'"),
        (("--rerun", "lead", "demo-user", "--type", "tool.*"), "no timeline filters"),
        (("--deny", "exec"), "--deny goes with --rerun"),
        (("--since", "yesterday"), "is not a log position (1200), an ISO time"),
        (("--since", str(1795599000)), "did you mean @1795599000"),
        (("--rerun", "lead", "demo-user", "--skip-corrupt"), "--rerun cannot --skip-corrupt"),
    ],
)
def test_bad_arguments_exit_2_with_one_clear_line(
    demo_db: str, args: tuple[str, ...], message: str
) -> None:
    done = clawlog("replay", "--db", demo_db, *args)
    assert done.returncode == 2 and message in done.stderr


def test_a_missing_log_exits_2(tmp_path: Path) -> None:
    done = clawlog("replay", "--db", str(tmp_path / "nope.db"), "--rerun", "a", "b")
    assert done.returncode == 2 and "no such file" in done.stderr
    assert not (tmp_path / "nope.db").exists()
